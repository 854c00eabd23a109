#pragma once
// The launchers of the kernel that quantises one x [rows, cols] both in 1x128 tiles and in 128x1 tiles written
// transposed, reading x once (framework/device/fp8_quantize.h: quantize_1x128_and_128x1_transposed); each returns
// the launch's status. e4m3 values are raw bytes.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// Where the 1x128 scale of row r and tile t lies: at r * row + t * tile (row-major [rows, tiles]: {tiles, 1};
// column-major: {1, rows}).
struct ScaleStrides {
  int64_t row, tile;
};

// Where the two quantisations of x [rows, cols] go.
struct Fp8RowsAndColumns {
  uint8_t* q;                    // [rows, cols] e4m3 in 1x128 tiles
  float* scales;                 // [rows, ceil(cols / 128)] as scale_strides place them
  uint8_t* q_t;                  // [cols, rows] e4m3: x^T in 1x128 tiles (128x1 tiles of x, transposed)
  float* scales_t;               // [cols, ceil(rows / 128)] as scale_t_strides place them
  ScaleStrides scale_strides;    // of scales
  ScaleStrides scale_t_strides;  // of scales_t
};

// The bits of quantize_tiles' 1x128 tiles and of its 128x1 tiles written transposed (fp8_quantize_kernels.h).
cudaError_t quantize_1x128_and_128x1_transposed(const Fp8RowsAndColumns& out, const float* x, int64_t rows,
                                                int64_t cols, bool pow2_scales, cudaStream_t stream);
// The same of a bf16 x, each element widened exactly: the bits of widening x to fp32 first.
cudaError_t quantize_1x128_and_128x1_transposed_bf16(const Fp8RowsAndColumns& out, const void* x, int64_t rows,
                                                     int64_t cols, bool pow2_scales, cudaStream_t stream);

}  // namespace hai::cuda::kernels
