#pragma once
// SwiGLU: out = silu(gate) * up, silu(g) = g * sigmoid(g). Tensors are [N, F] (N tokens, F = FFN width) and fp32,
// but for the inputs of swiglu_backward: gate and up may also be bf16 (both the same dtype, widened exactly), the
// form in which the layers save them for backward in bf16 training.

#include "framework/tensor/tensor.h"

namespace hai {

// out: [N, F] <- gate: [N, F], up: [N, F]
void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up, Stream stream = {});

// d_gate, d_up: [N, F] fp32 <- d_out: [N, F] fp32, gate, up: [N, F] fp32 or bf16. Overwrites d_gate and d_up.
void swiglu_backward(const Tensor& d_gate, const Tensor& d_up, const Tensor& d_out, const Tensor& gate,
                     const Tensor& up, Stream stream = {});

}  // namespace hai
