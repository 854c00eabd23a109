#include <cuda_bf16.h>

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

// The value of column `column` of a rotated head vector `row` [W] (x's own value outside the rotated block): the
// same fp32 products and sums as rope_kernel.
__device__ inline float rotated_value(const float* row, int64_t column, int32_t position, const float* cos,
                                      const float* sin, const RopeLayout& layout, float sin_sign) {
  int64_t offset = column - layout.column_offset;
  if (offset < 0 || offset >= 2 * layout.pairs) return row[column];
  if (position < 0 || position >= layout.table_positions) return NAN;
  int64_t i = offset / 2;
  float c = cos[position * layout.pairs + i];
  float s = sin_sign * sin[position * layout.pairs + i];
  float real = row[layout.column_offset + 2 * i];
  float imaginary = row[layout.column_offset + 2 * i + 1];
  return offset % 2 == 0 ? __fsub_rn(__fmul_rn(real, c), __fmul_rn(imaginary, s))
                         : __fadd_rn(__fmul_rn(real, s), __fmul_rn(imaginary, c));
}

// A warp per head vector (kRowsPerBlock per block), its lanes striding over the columns.
constexpr int kRowsPerBlock = 8;

__global__ void rope_to_bf16_kernel(__nv_bfloat16* out, const float* x, const int32_t* positions, const float* cos,
                                    const float* sin, RopeLayout layout, float sin_sign) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.y;  // token * heads + head
  if (row >= layout.tokens * layout.heads) return;
  int32_t position = positions[row / layout.heads];
  const float* in_row = x + row * layout.width;  // [W]
  __nv_bfloat16* out_row = out + row * layout.width;  // [W]
  for (int64_t column = threadIdx.x; column < layout.width; column += 32) {
    out_row[column] = __float2bfloat16_rn(rotated_value(in_row, column, position, cos, sin, layout, sin_sign));
  }
}

}  // namespace

cudaError_t rope_rotate_to_bf16(uint16_t* out, const float* x, const int32_t* positions, const float* cos,
                                const float* sin, const RopeLayout& layout, float sin_sign, cudaStream_t stream) {
  int64_t rows = layout.tokens * layout.heads;
  if (rows == 0 || layout.width == 0) return cudaSuccess;
  auto blocks = static_cast<unsigned int>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  rope_to_bf16_kernel<<<blocks, dim3(32, kRowsPerBlock), 0, stream>>>(reinterpret_cast<__nv_bfloat16*>(out), x,
                                                                      positions, cos, sin, layout, sin_sign);
  return cudaGetLastError();
}

cudaError_t rope_rotate(float* out, const float* x, const int32_t* positions, const float* cos, const float* sin,
                        const RopeLayout& layout, float sin_sign, cudaStream_t stream) {
  int64_t total = layout.tokens * layout.heads * layout.pairs;
  if (total == 0) return cudaSuccess;
  rope_kernel<<<grid_for(total), kThreads, 0, stream>>>(out, x, positions, cos, sin, layout, sin_sign);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
