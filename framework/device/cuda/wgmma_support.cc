#include "framework/device/cuda/wgmma_support.h"

namespace hai::cuda::kernels {

cudaError_t wgmma_applies(bool* applies) {
  *applies = false;
#if defined(HAI_CUDA_WGMMA)
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return status;
  int major = 0;
  status = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (status != cudaSuccess) return status;
  *applies = major == 9;
#endif
  return cudaSuccess;
}

}  // namespace hai::cuda::kernels
