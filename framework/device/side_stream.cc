#include "framework/device/side_stream.h"

#ifdef HAI_WITH_CUDA
#include <cuda_runtime_api.h>

#include "framework/core/check.h"

// The CUDA backend: streams and events of the CUDA runtime (no kernel, so no cuda/side_stream.cu).
namespace hai::cuda {

Stream create_low_priority_stream(Device device) {
  HAI_CUDA_CHECK(cudaSetDevice(device.index));
  int lowest_priority = 0, highest_priority = 0;
  HAI_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest_priority, &highest_priority));
  // NOTE: non-blocking: the legacy default stream (the compute stream) must not serialise with it.
  cudaStream_t stream = nullptr;
  HAI_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, lowest_priority));
  return Stream{stream};
}

void* create_event(Device device) {
  HAI_CUDA_CHECK(cudaSetDevice(device.index));
  cudaEvent_t event = nullptr;
  HAI_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

void destroy_stream_and_event(Stream stream, void* event) {
  if (event != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event));
  if (stream.handle != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream.handle));
}

void record_event(Device device, void* event, Stream stream) {
  HAI_CUDA_CHECK(cudaSetDevice(device.index));
  HAI_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream.handle)));
}

void stream_waits_for(Device device, Stream stream, void* event, Stream from) {
  record_event(device, event, from);
  HAI_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream.handle), static_cast<cudaEvent_t>(event), 0));
}

void compute_waits_for(Device device, void* event) {
  HAI_CUDA_CHECK(cudaSetDevice(device.index));
  HAI_CUDA_CHECK(cudaStreamWaitEvent(nullptr, static_cast<cudaEvent_t>(event), 0));
}

}  // namespace hai::cuda
#endif

namespace hai {

SideStream::SideStream(Device device) : device_(device) {
#ifdef HAI_WITH_CUDA
  if (device.is_cuda()) {
    stream_ = cuda::create_low_priority_stream(device);
    compute_point_ = cuda::create_event(device);
  }
#endif
}

SideStream::~SideStream() {
#ifdef HAI_WITH_CUDA
  if (device_.is_cuda()) cuda::destroy_stream_and_event(stream_, compute_point_);
#endif
}

void SideStream::wait_for_compute() {
#ifdef HAI_WITH_CUDA
  if (device_.is_cuda()) cuda::stream_waits_for(device_, stream_, compute_point_, Stream{});
#endif
}

void SideStream::mark(StreamMark& mark) {
#ifdef HAI_WITH_CUDA
  if (device_.is_cuda()) cuda::record_event(device_, mark.event_, stream_);
#endif
  mark.recorded_ = true;
}

StreamMark::StreamMark(Device device) : device_(device) {
#ifdef HAI_WITH_CUDA
  if (device.is_cuda()) event_ = cuda::create_event(device);
#endif
}

StreamMark::~StreamMark() {
#ifdef HAI_WITH_CUDA
  if (device_.is_cuda()) cuda::destroy_stream_and_event(Stream{}, event_);
#endif
}

void StreamMark::join_compute() {
  if (!recorded_) return;
#ifdef HAI_WITH_CUDA
  if (device_.is_cuda()) cuda::compute_waits_for(device_, event_);
#endif
}

}  // namespace hai
