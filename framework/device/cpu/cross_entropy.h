#pragma once
// CPU reference of framework/device/cross_entropy.h (operands already checked by the dispatcher).

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai::cpu {

void cross_entropy_forward(const Tensor& losses, const Tensor& logits, const Tensor& targets, int32_t ignore_index);
void cross_entropy_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets, float scale,
                            int32_t ignore_index);
void cross_entropy_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                                 const Tensor& targets, float scale, int32_t ignore_index);

}  // namespace hai::cpu
