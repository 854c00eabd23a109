#pragma once
// CUDA implementation of framework/device/expert_dispatch.h (operands already checked by the dispatcher).

#include "framework/device/expert_dispatch.h"

namespace hai::cuda {

void plan_dispatch_send(const DispatchSendLayout& layout, const RoutingPlan& plan, Stream stream);
void plan_dispatch_receive(const DispatchReceiveLayout& layout, const Tensor& recv_counts, Stream stream);
void gather_rows(const Tensor& out, const Tensor& in, const Tensor& index, Stream stream);

}  // namespace hai::cuda
