#pragma once
// CUDA implementation of framework/device/router.h (operands already checked by the dispatcher). Bit-identical to
// the CPU op; it also requires K <= 32 and E <= 2048.

#include "framework/device/router.h"

namespace hai::cuda {

void router_forward(const Tensor& scores, const Tensor& topk_indices, const Tensor& topk_weights,
                    const Tensor& logits, const Tensor& bias, const RouterOptions& options, Stream stream);
void router_backward(const Tensor& d_logits, const Tensor& d_topk_weights, const Tensor& scores,
                     const Tensor& topk_indices, float routed_scaling_factor, Stream stream);

}  // namespace hai::cuda
