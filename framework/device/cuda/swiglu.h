#pragma once
// CUDA implementation of framework/device/swiglu.h (operands already checked by the dispatcher).

#include "framework/device/swiglu_rows.h"
#include "framework/tensor/tensor.h"

namespace hai::cuda {

void swiglu_forward(const Tensor& out, const void* gate, const void* up, DType input_dtype, const SwigluRows& rows,
                    Stream stream);
void swiglu_forward_fp8(const Tensor& out, const Tensor& q, const Tensor& scales, const Tensor& gate, const Tensor& up,
                        bool pow2_scales, Stream stream);
void swiglu_backward(void* d_gate, void* d_up, DType gradient_dtype, const Tensor& d_out, const void* gate,
                     const void* up, DType input_dtype, const SwigluRows& rows, Stream stream);

}  // namespace hai::cuda
