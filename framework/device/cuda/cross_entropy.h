#pragma once
// CUDA implementation of framework/device/cross_entropy.h (operands already checked by the dispatcher; targets are
// not range-checked, see cross_entropy_kernels.h).

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai::cuda {

void cross_entropy_forward(const Tensor& losses, const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                           Stream stream);
void cross_entropy_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets, float scale,
                            int32_t ignore_index, Stream stream);
void cross_entropy_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                                 const Tensor& targets, float scale, int32_t ignore_index, Stream stream);

}  // namespace hai::cuda
