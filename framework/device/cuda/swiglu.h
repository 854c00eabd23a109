#pragma once
// CUDA implementation of framework/device/swiglu.h (operands already checked by the dispatcher).

#include "framework/tensor/tensor.h"

namespace hai::cuda {

void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up, Stream stream);
void swiglu_forward_fp8(const Tensor& out, const Tensor& q, const Tensor& scales, const Tensor& gate, const Tensor& up,
                        bool pow2_scales, Stream stream);
void swiglu_backward(const Tensor& d_gate, const Tensor& d_up, const Tensor& d_out, const Tensor& gate,
                     const Tensor& up, Stream stream);

}  // namespace hai::cuda
