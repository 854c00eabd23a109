#include "framework/device/cuda/expert_dispatch.h"

#include <cstring>

#include "framework/device/cuda/expert_dispatch_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {

void count_dispatch_rows(const Tensor& send_counts, const RoutingPlan& plan, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(plan.expert_offsets.device(), stream);
  check_launch(kernels::count_dispatch_rows(send_counts.data<int32_t>(), plan.expert_offsets.data<int32_t>(),
                                            send_counts.numel(), cuda_stream),
               "count_dispatch_rows");
}

void plan_dispatch_receive(const DispatchReceiveLayout& layout, const Tensor& recv_counts, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(recv_counts.device(), stream);
  kernels::DispatchShape shape{.ranks = recv_counts.size(0),
                               .local_experts = recv_counts.size(1),
                               .received_rows = layout.local_arrival.numel()};
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

void* allocate_pinned(Device device, size_t bytes) {
  HAI_CUDA_CHECK(cudaSetDevice(device.index));
  void* pinned = nullptr;
  HAI_CUDA_CHECK(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault));
  return pinned;
}

void free_pinned(void* pinned) {
  if (pinned != nullptr) cudaFreeHost(pinned);
}

void read_counts(Device device, int32_t* values, void* pinned, const Tensor& counts, void* event, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(device, stream);
  HAI_CUDA_CHECK(cudaMemcpyAsync(pinned, counts.raw(), counts.bytes(), cudaMemcpyDeviceToHost, cuda_stream));
  HAI_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), cuda_stream));
  // NOTE: the one host wait of a dispatch: for the copy's event, not cudaStreamSynchronize or a device drain.
  HAI_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
  std::memcpy(values, pinned, counts.bytes());
}

}  // namespace hai::cuda
