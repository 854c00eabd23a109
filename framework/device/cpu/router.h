#pragma once
// CPU reference of framework/device/router.h (operands already checked by the dispatcher).

#include "framework/device/router.h"

namespace hai::cpu {

void router_forward(const Tensor& scores, const Tensor& topk_indices, const Tensor& topk_weights,
                    const Tensor& logits, const Tensor& bias, const RouterOptions& options);
void router_backward(const Tensor& d_logits, const Tensor& d_topk_weights, const Tensor& scores,
                     const Tensor& topk_indices, float routed_scaling_factor);

}  // namespace hai::cpu
