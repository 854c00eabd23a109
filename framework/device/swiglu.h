#pragma once
// SwiGLU: out = silu(gate) * up, silu(g) = g * sigmoid(g). All tensors fp32, [N, F] (N tokens, F = FFN width).

#include "framework/tensor/tensor.h"

namespace hai {

// out: [N, F] <- gate: [N, F], up: [N, F]
void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up, Stream stream = {});

// d_gate, d_up: [N, F] <- d_out, gate, up: [N, F]. Overwrites d_gate and d_up.
void swiglu_backward(const Tensor& d_gate, const Tensor& d_up, const Tensor& d_out, const Tensor& gate,
                     const Tensor& up, Stream stream = {});

}  // namespace hai
