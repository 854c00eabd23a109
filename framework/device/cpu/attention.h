#pragma once
// CPU reference of framework/device/attention.h (operands already checked by the dispatcher). bf16 q, k, v are
// widened to fp32 copies first, so the math is the fp32 path's on the same values.

#include "framework/tensor/tensor.h"

namespace hai::cpu {

void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       float softmax_scale);
void attention_backward(const Tensor& d_q, const Tensor& d_k, const Tensor& d_v, const Tensor& d_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        float softmax_scale);

}  // namespace hai::cpu
