#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

__global__ void scale_kernel(float* values, float factor, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) values[i] *= factor;
}

__global__ void add_scaled_kernel(float* y, const float* x, float alpha, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) y[i] = __fadd_rn(y[i], __fmul_rn(alpha, x[i]));
}

__global__ void fill_kernel(float* values, float value, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) values[i] = value;
}

// One block: thread i sums x[i], x[i + kThreads], ... in double, then a fixed tree halves the partial sums.
__global__ void accumulate_sum_kernel(float* total, const float* x, float scale, int64_t n) {
  __shared__ double partial[kThreads];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) sum += static_cast<double>(x[i]);
  partial[threadIdx.x] = sum;
  for (int width = kThreads / 2; width > 0; width /= 2) {
    __syncthreads();
    if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
  }
  if (threadIdx.x == 0) total[0] += static_cast<float>(partial[0] * static_cast<double>(scale));
}

}  // namespace

cudaError_t fill(float* values, float value, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  fill_kernel<<<grid_for(n), kThreads, 0, stream>>>(values, value, n);
  return cudaGetLastError();
}

cudaError_t accumulate_sum(float* total, const float* x, float scale, int64_t n, cudaStream_t stream) {
  accumulate_sum_kernel<<<1, kThreads, 0, stream>>>(total, x, scale, n);
  return cudaGetLastError();
}

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
