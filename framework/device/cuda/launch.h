#pragma once
// What every CUDA op does on the host before queueing work: make the operands' device current for this thread and
// turn the op's Stream into a cudaStream_t. Kernel launchers (the *_kernels.h files) return the launch's
// cudaError_t; check_launch turns a failure into hai::Error.

#include <cuda_runtime_api.h>

#include "framework/core/check.h"
#include "framework/device/cuda/wgmma_support.h"
#include "framework/tensor/tensor.h"

namespace hai::cuda {

// Makes `device` current and returns the stream to queue on (nullptr: the default stream).
inline cudaStream_t prepare_launch(Device device, Stream stream) {
  HAI_CUDA_CHECK(cudaSetDevice(device.index));
  return static_cast<cudaStream_t>(stream.handle);
}

inline void check_launch(cudaError_t status, const char* op) {
  if (status != cudaSuccess) HAI_THROW("CUDA {} failed to launch: {}", op, cudaGetErrorString(status));
}

// Whether the wgmma (sm_90a) kernels run on the current device (kernels::wgmma_applies, checked).
inline bool wgmma_runs_here() {
  bool applies = false;
  HAI_CUDA_CHECK(kernels::wgmma_applies(&applies));
  return applies;
}

}  // namespace hai::cuda
