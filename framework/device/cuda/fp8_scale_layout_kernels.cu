#include "framework/device/cuda/fp8_scale_layout_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

// Entry i in the order of the output, so that a warp's writes are consecutive: column-major when the output's rows
// are adjacent (row_stride 1: cuBLASLt's 1x128 layout, our transpose), else row-major.
__device__ void copy_entry(const StridedScaleCopy& copy, int64_t i) {
  bool column_major = copy.row_stride == 1;
  int64_t r = column_major ? i % copy.rows : i / copy.columns;
  int64_t c = column_major ? i / copy.rows : i % copy.columns;
  copy.out[r * copy.row_stride + c * copy.column_stride] = copy.scales[r * copy.columns + c];
}

// A grid-stride loop over the first copy's entries and then the second's.
__global__ void copy_scales_strided_kernel(StridedScaleCopy first, StridedScaleCopy second) {
  int64_t first_count = first.rows * first.columns, n = first_count + second.rows * second.columns;
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    if (i < first_count) {
      copy_entry(first, i);
    } else {
      copy_entry(second, i - first_count);
    }
  }
}

}  // namespace

cudaError_t copy_scales_strided(const StridedScaleCopy& first, const StridedScaleCopy& second, cudaStream_t stream) {
  int64_t n = first.rows * first.columns + second.rows * second.columns;
  if (n == 0) return cudaSuccess;
  copy_scales_strided_kernel<<<grid_for(n), kThreads, 0, stream>>>(first, second);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
