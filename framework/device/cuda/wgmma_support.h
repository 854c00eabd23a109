#pragma once
// Whether the wgmma (sm_90a) kernels run on the current device: the build compiled them (HAI_CUDA_WGMMA,
// cmake/Cuda.cmake) and the device is a compute capability 9.x.

#include <cuda_runtime_api.h>

namespace hai::cuda::kernels {

cudaError_t wgmma_applies(bool* applies);

}  // namespace hai::cuda::kernels
