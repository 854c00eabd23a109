#include "framework/device/cuda/fp8_scale_layout_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

__global__ void copy_scales_strided_kernel(float* out, const float* scales, int64_t rows, int64_t columns,
                                           int64_t row_stride, int64_t column_stride) {
  int64_t n = rows * columns;
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    int64_t r = i / columns, c = i % columns;
    out[r * row_stride + c * column_stride] = scales[i];
  }
}

}  // namespace

cudaError_t copy_scales_strided(float* out, const float* scales, int64_t rows, int64_t columns, int64_t row_stride,
                                int64_t column_stride, cudaStream_t stream) {
  int64_t n = rows * columns;
  if (n == 0) return cudaSuccess;
  copy_scales_strided_kernel<<<grid_for(n), kThreads, 0, stream>>>(out, scales, rows, columns, row_stride,
                                                                   column_stride);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
