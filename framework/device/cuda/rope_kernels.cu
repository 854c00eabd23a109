#include <cmath>

#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/rope_kernels.h"

namespace hai::cuda::kernels {
namespace {

// One thread per rotated pair; every product and sum rounded separately, as the CPU op does.
__global__ void rope_kernel(float* out, const float* x, const int32_t* positions, const float* cos, const float* sin,
                            RopeLayout layout, float sin_sign) {
  int64_t total = layout.tokens * layout.heads * layout.pairs;
  for (int64_t index = grid_index(); index < total; index += grid_stride()) {
    int64_t row = index / layout.pairs;  // token * heads + head
    int64_t i = index % layout.pairs;
    int32_t position = positions[row / layout.heads];
    int64_t column = row * layout.width + layout.column_offset + 2 * i;
    if (position < 0 || position >= layout.table_positions) {
      out[column] = out[column + 1] = NAN;
      continue;
    }
    float c = cos[position * layout.pairs + i];
    float s = sin_sign * sin[position * layout.pairs + i];
    float real = x[column];
    float imaginary = x[column + 1];
    out[column] = __fsub_rn(__fmul_rn(real, c), __fmul_rn(imaginary, s));
    out[column + 1] = __fadd_rn(__fmul_rn(real, s), __fmul_rn(imaginary, c));
  }
}

}  // namespace

cudaError_t rope_rotate(float* out, const float* x, const int32_t* positions, const float* cos, const float* sin,
                        const RopeLayout& layout, float sin_sign, cudaStream_t stream) {
  int64_t total = layout.tokens * layout.heads * layout.pairs;
  if (total == 0) return cudaSuccess;
  rope_kernel<<<grid_for(total), kThreads, 0, stream>>>(out, x, positions, cos, sin, layout, sin_sign);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
