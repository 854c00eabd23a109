#pragma once
// SwiGLU: out = silu(gate) * up, silu(g) = g * sigmoid(g). Tensors are [N, F] (N tokens, F = FFN width), fp32 or
// bf16 but for d_out (fp32): gate and up share a dtype (bf16 is widened exactly), as do d_gate and d_up; the math is
// fp32 and a bf16 result is rounded to nearest even once (bf16 training keeps the routed experts' activations so).

#include "framework/tensor/tensor.h"

namespace hai {

// out: [N, F] <- gate: [N, F], up: [N, F]
void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up, Stream stream = {});

// d_gate, d_up: [N, F] <- d_out: [N, F] fp32, gate, up: [N, F]. Overwrites d_gate and d_up.
void swiglu_backward(const Tensor& d_gate, const Tensor& d_up, const Tensor& d_out, const Tensor& gate,
                     const Tensor& up, Stream stream = {});

}  // namespace hai
