#pragma once
// CUDA implementation of framework/device/attention.h (operands already checked by the dispatcher): bf16 q, k, v
// run on tensor cores, fp32 ones on CUDA cores.

#include "framework/tensor/tensor.h"

namespace hai::cuda {

void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       float softmax_scale, Stream stream);
void attention_backward(const Tensor& d_q, const Tensor& d_k, const Tensor& d_v, const Tensor& d_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        float softmax_scale, Stream stream);

}  // namespace hai::cuda
