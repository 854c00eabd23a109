#pragma once
// SwiGLU: out = silu(gate) * up, silu(g) = g * sigmoid(g). Tensors are [N, F] (N tokens, F = FFN width), fp32 or
// bf16 but for d_out (fp32): gate and up share a dtype (bf16 is widened exactly), as do d_gate and d_up; the math is
// fp32 and a bf16 result is rounded to nearest even once (bf16 training keeps the routed experts' activations so).

#include "framework/tensor/tensor.h"

namespace hai {

// out: [N, F] <- gate: [N, F], up: [N, F]
void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up, Stream stream = {});
// out: [N, F] <- gate_up: [N, 2F], gate in its first F columns and up in its last F (one GEMM's output).
void swiglu_forward(const Tensor& out, const Tensor& gate_up, Stream stream = {});

// The SwiGLU before an FP8 GEMM (the routed experts' down_proj in fp8 training), in one pass: out: [N, F] bf16 and
// q: [N, F] e4m3, scales: [N, ceil(F / 128)] fp32 <- gate, up: [N, F] bf16. The bits of swiglu_forward into fp32,
// quantize_1x128 of those values (fp8_quantize.h, pow2_scales as there) into q and scales, and their rounding to
// bf16 into out.
void swiglu_forward_fp8(const Tensor& out, const Tensor& q, const Tensor& scales, const Tensor& gate, const Tensor& up,
                        bool pow2_scales, Stream stream = {});

// d_gate, d_up: [N, F] <- d_out: [N, F] fp32, gate, up: [N, F]. Overwrites d_gate and d_up.
void swiglu_backward(const Tensor& d_gate, const Tensor& d_up, const Tensor& d_out, const Tensor& gate,
                     const Tensor& up, Stream stream = {});
// d_gate_up: [N, 2F] (d_gate in its first F columns, d_up in its last F) <- d_out: [N, F] fp32, gate_up: [N, 2F].
void swiglu_backward(const Tensor& d_gate_up, const Tensor& d_out, const Tensor& gate_up, Stream stream = {});

}  // namespace hai
