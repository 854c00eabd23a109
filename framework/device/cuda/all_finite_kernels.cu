#include "framework/device/cuda/all_finite_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

__global__ void flag_non_finite_kernel(int32_t* found, const float* x, int64_t n) {
  bool non_finite = false;
  for (int64_t i = grid_index(); i < n; i += grid_stride()) non_finite |= !isfinite(x[i]);
  // NOTE: every writer stores the same value, so plain stores from any number of threads are race-free in effect.
  if (__syncthreads_or(non_finite) && threadIdx.x == 0) *found = 1;
}

}  // namespace

cudaError_t flag_non_finite(int32_t* found, const float* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  flag_non_finite_kernel<<<grid_for(n), kThreads, 0, stream>>>(found, x, n);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
