#pragma once
// CPU reference of framework/device/balance_loss.h (operands already checked by the dispatcher).

#include "framework/tensor/tensor.h"

namespace hai::cpu {

void balance_loss_forward(const Tensor& loss, const Tensor& expert_fraction, const Tensor& scores,
                          const Tensor& topk_indices, float alpha);
void balance_loss_backward(const Tensor& d_logits, const Tensor& d_loss, const Tensor& expert_fraction,
                           const Tensor& scores, float alpha);

}  // namespace hai::cpu
