#include "framework/device/cuda/side_stream.h"

#include <cuda_runtime_api.h>

#include "framework/core/check.h"

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
