#pragma once
// Launcher of the rotary embedding kernel behind framework/device/rope.h. Positions are not range-checked on the
// host: a position outside [0, table_positions) gives NaN in the rotated columns.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

struct RopeLayout {
  int64_t tokens;           // T
  int64_t heads;            // head vectors per token (the product of the middle dims)
  int64_t width;            // W, the width of one head vector
  int64_t column_offset;    // first rotated column
  int64_t pairs;            // R / 2, the table's columns
  int64_t table_positions;  // P, the table's rows
};

// out [T, heads, W] <- x rotated by sin_sign * angle (1: forward, -1: backward); out may be x; columns outside
// the rotated block are not touched.
cudaError_t rope_rotate(float* out, const float* x, const int32_t* positions, const float* cos, const float* sin,
                        const RopeLayout& layout, float sin_sign, cudaStream_t stream);

// out [T, heads, W] bf16 <- every column of x (not out): the rotated block rotated as rope_rotate does, the others
// copied, each rounded once to nearest even.
cudaError_t rope_rotate_to_bf16(uint16_t* out, const float* x, const int32_t* positions, const float* cos,
                                const float* sin, const RopeLayout& layout, float sin_sign, cudaStream_t stream);

}  // namespace hai::cuda::kernels
