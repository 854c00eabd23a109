#pragma once
// CUDA implementation of framework/device/balance_loss.h (operands already checked by the dispatcher); E <= 4096.

#include "framework/device/balance_loss.h"

namespace hai::cuda {

void balance_loss_forward(const Tensor& loss, const Tensor& expert_fraction, const Tensor& scores,
                          const Tensor& topk_indices, float alpha, Stream stream);
void balance_loss_backward(const Tensor& d_logits, const Tensor& d_loss, const Tensor& expert_fraction,
                           const Tensor& scores, float alpha, Stream stream);

}  // namespace hai::cuda
