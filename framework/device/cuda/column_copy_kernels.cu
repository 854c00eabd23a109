#include "framework/device/cuda/column_copy_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

__global__ void copy_columns_kernel(float* dst, const float* src, ColumnCopyLayout layout) {
  int64_t total = layout.dst_rows * layout.width;
  for (int64_t index = grid_index(); index < total; index += grid_stride()) {
    int64_t r = index / layout.width;
    int64_t c = index % layout.width;
    int64_t source_row = r / layout.group;
    dst[r * layout.dst_width + layout.dst_offset + c] = src[source_row * layout.src_width + layout.src_offset + c];
  }
}

__global__ void sum_columns_kernel(float* dst, const float* src, ColumnCopyLayout layout) {
  int64_t total = layout.dst_rows * layout.width;
  for (int64_t index = grid_index(); index < total; index += grid_stride()) {
    int64_t r = index / layout.width;
    int64_t c = index % layout.width;
    float sum = 0.0f;
    for (int64_t g = 0; g < layout.group; ++g) {
      sum += src[(r * layout.group + g) * layout.src_width + layout.src_offset + c];
    }
    dst[r * layout.dst_width + layout.dst_offset + c] = sum;
  }
}

}  // namespace

cudaError_t copy_columns(float* dst, const float* src, const ColumnCopyLayout& layout, cudaStream_t stream) {
  int64_t total = layout.dst_rows * layout.width;
  if (total == 0) return cudaSuccess;
  copy_columns_kernel<<<grid_for(total), kThreads, 0, stream>>>(dst, src, layout);
  return cudaGetLastError();
}

cudaError_t sum_columns(float* dst, const float* src, const ColumnCopyLayout& layout, cudaStream_t stream) {
  int64_t total = layout.dst_rows * layout.width;
  if (total == 0) return cudaSuccess;
  sum_columns_kernel<<<grid_for(total), kThreads, 0, stream>>>(dst, src, layout);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
