#pragma once
// CPU reference of framework/device/expert_dispatch.h (operands already checked by the dispatcher).

#include "framework/device/expert_dispatch.h"

namespace hai::cpu {

void count_dispatch_rows(const Tensor& send_counts, const RoutingPlan& plan);
void plan_dispatch_receive(const DispatchReceiveLayout& layout, const Tensor& recv_counts);
void gather_rows(const Tensor& out, const Tensor& in, const Tensor& index);

}  // namespace hai::cpu
