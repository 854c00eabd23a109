#pragma once
// CPU reference of framework/device/token_permutation.h (operands already checked by the dispatcher).

#include "framework/device/token_permutation.h"

namespace hai::cpu {

void build_routing_plan(const RoutingPlan& plan, const Tensor& topk_indices);
void permute_tokens(const Tensor& x_sorted, const Tensor& x, const RoutingPlan& plan);
void permute_tokens_backward(const Tensor& d_x, const Tensor& d_x_sorted, const RoutingPlan& plan);
void unpermute_tokens(const Tensor& out, const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan,
                      const Tensor& addend);
void unpermute_tokens_backward(const Tensor& d_y_sorted, const Tensor& d_topk_weights, const Tensor& d_out,
                               const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan);

}  // namespace hai::cpu
