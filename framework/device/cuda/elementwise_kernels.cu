#include "framework/device/cuda/elementwise_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

__global__ void scale_kernel(float* values, float factor, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) values[i] *= factor;
}

__global__ void add_scaled_kernel(float* y, const float* x, float alpha, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) y[i] = __fadd_rn(y[i], __fmul_rn(alpha, x[i]));
}

}  // namespace

cudaError_t scale(float* values, float factor, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(values, factor, n);
  return cudaGetLastError();
}

cudaError_t add_scaled(float* y, const float* x, float alpha, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  add_scaled_kernel<<<grid_for(n), kThreads, 0, stream>>>(y, x, alpha, n);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
