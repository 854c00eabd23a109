#pragma once
// CUDA implementation of build_routing_plan (framework/device/token_permutation.h; operands already checked by
// the dispatcher): the CPU op's stable plan, bit for bit, built on the device without a host round trip. Indices
// outside [0, E) are not detected (that would synchronise): they are left out of the plan.

#include "framework/device/token_permutation.h"

namespace hai::cuda {

void build_routing_plan(const RoutingPlan& plan, const Tensor& topk_indices, Stream stream);

}  // namespace hai::cuda
