#include "framework/device/cuda/routing_plan.h"

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/routing_plan_kernels.h"

namespace hai::cuda {

void build_routing_plan(const RoutingPlan& plan, const Tensor& topk_indices, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(topk_indices.device(), stream);
  check_launch(kernels::build_routing_plan(plan.positions.data<int32_t>(), plan.sources.data<int32_t>(),
                                           plan.expert_offsets.data<int32_t>(), topk_indices.data<int32_t>(),
                                           topk_indices.numel(), plan.expert_offsets.numel() - 1, cuda_stream),
               "build_routing_plan");
}

}  // namespace hai::cuda
