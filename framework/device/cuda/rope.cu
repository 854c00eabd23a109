#include <cuda_bf16.h>

#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/rope_pair.cuh"

namespace hai::cuda::kernels {
namespace {

// One thread per rotated pair.
__global__ void rope_kernel(float* out, const float* x, const int32_t* positions, const float* cos, const float* sin,
                            RopeLayout layout, float sin_sign) {
  int64_t total = layout.tokens * layout.heads * layout.pairs;
  for (int64_t index = grid_index(); index < total; index += grid_stride()) {
    int64_t row = index / layout.pairs;  // token * heads + head
    int64_t i = index % layout.pairs;
    int64_t column = row * layout.width + layout.column_offset + 2 * i;
    float2 pair = rotated_pair(x[column], x[column + 1], i, positions[row / layout.heads], cos, sin, layout.pairs,
                               layout.table_positions, sin_sign);
    out[column] = pair.x;
    out[column + 1] = pair.y;
  }
}

// Columns per thread of rope_to_bf16_vector_kernel: two 16-byte fp32 loads, one 16-byte bf16 store.
constexpr int kVector = 8;

// Whether every head vector [W] is whole, aligned Vectors of kVector columns, none splitting a pair.
bool rotates_vectors(const uint16_t* out, const float* x, const RopeLayout& layout) {
  return layout.width % kVector == 0 && layout.column_offset % 2 == 0 && vector_aligned<float, kVector>(x) &&
         vector_aligned<__nv_bfloat16, kVector>(out);
}

// A row_vector_block over the head vectors [W] of x and out, a Vector of kVector columns a thread: it holds both
// halves of its pairs, since Vectors and pairs start on even columns.
__global__ void rope_to_bf16_vector_kernel(__nv_bfloat16* out, const float* x, const int32_t* positions,
                                           const float* cos, const float* sin, RopeLayout layout, float sin_sign) {
  int64_t row = block_row();  // token * heads + head
  if (row >= layout.tokens * layout.heads) return;
  int32_t position = positions[row / layout.heads];
  const float* in_row = x + row * layout.width;       // [W]
  __nv_bfloat16* out_row = out + row * layout.width;  // [W]
  for (int64_t column = kVector * threadIdx.x; column < layout.width; column += kVector * blockDim.x) {
    Vector<float, kVector> in = load_vector<kVector>(in_row + column);
    Vector<__nv_bfloat16, kVector> result;
#pragma unroll
    for (int k = 0; k < kVector; k += 2) {
      int64_t offset = column + k - layout.column_offset;  // of the pair's real column in the rotated block
      float2 pair{in.values[k], in.values[k + 1]};
      if (offset >= 0 && offset < 2 * layout.pairs) {
        pair = rotated_pair(pair.x, pair.y, offset / 2, position, cos, sin, layout.pairs, layout.table_positions,
                            sin_sign);
      }
      result.values[k] = __float2bfloat16_rn(pair.x);
      result.values[k + 1] = __float2bfloat16_rn(pair.y);
    }
    store_vector(out_row + column, result);
  }
}

// The value of column `column` of a rotated head vector `row` [W] (x's own value outside the rotated block).
__device__ inline float rotated_value(const float* row, int64_t column, int32_t position, const float* cos,
                                      const float* sin, const RopeLayout& layout, float sin_sign) {
  int64_t offset = column - layout.column_offset;
  if (offset < 0 || offset >= 2 * layout.pairs) return row[column];
  int64_t real = column - offset % 2;
  float2 pair = rotated_pair(row[real], row[real + 1], offset / 2, position, cos, sin, layout.pairs,
                             layout.table_positions, sin_sign);
  return offset % 2 == 0 ? pair.x : pair.y;
}

// Any layout: a warp per head vector (kRowsPerBlock per block), its lanes striding over the columns.
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
  if (rotates_vectors(out, x, layout)) {
    dim3 block = row_vector_block(layout.width / kVector);
    rope_to_bf16_vector_kernel<<<row_vector_blocks(rows, block), block, 0, stream>>>(
        reinterpret_cast<__nv_bfloat16*>(out), x, positions, cos, sin, layout, sin_sign);
    return cudaGetLastError();
  }
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
