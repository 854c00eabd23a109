#pragma once
// CUDA implementation of framework/device/token_permutation.h (operands already checked by the dispatcher), except
// build_routing_plan, which is in routing_plan.h.

#include "framework/device/token_permutation.h"

namespace hai::cuda {

void permute_tokens(const Tensor& x_sorted, const Tensor& x, const RoutingPlan& plan, Stream stream);
void permute_tokens_backward(const Tensor& d_x, const Tensor& d_x_sorted, const RoutingPlan& plan, Stream stream);
void unpermute_tokens(const Tensor& out, const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan,
                      const Tensor& addend, Stream stream);
void unpermute_tokens_backward(const Tensor& d_y_sorted, const Tensor& d_topk_weights, const Tensor& d_out,
                               const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan,
                               Stream stream);

}  // namespace hai::cuda
