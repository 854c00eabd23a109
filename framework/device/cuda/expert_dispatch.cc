#include "framework/device/cuda/expert_dispatch.h"

#include "framework/device/cuda/expert_dispatch_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {

void plan_dispatch_send(const DispatchSendLayout& layout, const RoutingPlan& plan, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(plan.positions.device(), stream);
  const int64_t ranks = layout.send_counts.size(0);
  kernels::DispatchShape shape{.ranks = ranks,
                               .local_experts = layout.send_counts.size(1),
                               .capacity = layout.slot_token.numel() / ranks,
                               .experts_per_token = plan.positions.size(1)};
  check_launch(kernels::plan_dispatch_send(layout.send_counts.data<int32_t>(), layout.slot_token.data<int32_t>(),
                                           layout.token_slots.data<int32_t>(),
                                           plan.expert_offsets.data<int32_t>(), plan.sources.data<int32_t>(), shape,
                                           cuda_stream),
               "plan_dispatch_send");
}

void plan_dispatch_receive(const DispatchReceiveLayout& layout, const Tensor& recv_counts, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(recv_counts.device(), stream);
  const int64_t ranks = recv_counts.size(0);
  kernels::DispatchShape shape{.ranks = ranks,
                               .local_experts = recv_counts.size(1),
                               .capacity = layout.local_arrival.numel() / ranks,
                               .experts_per_token = 0};
  kernels::ReceiveLayoutPointers pointers{.local_offsets = layout.local_offsets.data<int32_t>(),
                                          .segments = layout.segments.data<int32_t>(),
                                          .padded_segments = layout.padded_segments.data<int32_t>(),
                                          .padded_local_offsets = layout.padded_local_offsets.data<int32_t>(),
                                          .arrival_starts = layout.arrival_starts.data<int32_t>(),
                                          .local_arrival = layout.local_arrival.data<int32_t>(),
                                          .arrival_local = layout.arrival_local.data<int32_t>()};
  check_launch(kernels::plan_dispatch_receive(pointers, recv_counts.data<int32_t>(), shape, cuda_stream),
               "plan_dispatch_receive");
}

void gather_rows(const Tensor& out, const Tensor& in, const Tensor& index, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(out.device(), stream);
  const int64_t rows = out.size(0);
  const int64_t row_bytes = rows > 0 ? static_cast<int64_t>(out.bytes()) / rows : 0;
  check_launch(kernels::gather_rows(out.raw(), in.raw(), index.data<int32_t>(), rows, row_bytes, cuda_stream),
               "gather_rows");
}

}  // namespace hai::cuda
