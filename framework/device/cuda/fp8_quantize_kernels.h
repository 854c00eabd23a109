#pragma once
// Launchers of the fp8 block-quantisation kernels behind framework/device/fp8_quantize.h; each returns the launch's
// status. Matrices are row-major [rows, cols] fp32; e4m3 values are raw bytes.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// An [rows, cols] matrix cut into tiles of tile_rows x tile_cols (partial at the right and bottom edges).
struct Fp8Layout {
  int64_t rows, cols, tile_rows, tile_cols;
};

// q: [rows, cols] (or [cols, rows] transposed), scales: one per tile in tile row-major order (or transposed).
cudaError_t quantize_tiles(uint8_t* q, float* scales, const float* x, Fp8Layout layout, bool pow2_scales,
                           bool transposed, cudaStream_t stream);
// quantize_tiles' 1x128 tiles of a bf16 x [rows, cols], each element widened exactly: the bits of widening x to fp32
// first.
cudaError_t quantize_1x128_bf16(uint8_t* q, float* scales, const void* x, int64_t rows, int64_t cols,
                                bool pow2_scales, cudaStream_t stream);
// quantize_tiles' 128x1 tiles of a bf16 x [rows, cols] written transposed (q_t: [cols, rows], scales_t:
// [cols, ceil(rows / 128)]), each element widened exactly: the bits of widening x to fp32 first.
cudaError_t quantize_128x1_transposed_bf16(uint8_t* q_t, float* scales_t, const void* x, int64_t rows, int64_t cols,
                                          bool pow2_scales, cudaStream_t stream);

// One weight of a batch quantised in 128x128 blocks both as stored and transposed (exact scales, no powers of 2).
struct Fp8WeightEntry {
  const float* x;      // [rows, cols]
  uint8_t* q;          // [rows, cols] e4m3
  float* scales;       // [ceil(rows / 128), ceil(cols / 128)]
  uint8_t* q_t;        // [cols, rows] e4m3
  float* scales_t;     // [ceil(cols / 128), ceil(rows / 128)]
  int64_t rows, cols;
  int64_t first_tile;  // the 128x128 tiles of the entries before this one
};

// Every entry of entries[count] (device memory, first_tile ascending), `tiles` tiles in all: the bits of
// quantize_tiles with 128x128 tiles, not transposed and transposed, in one kernel reading each weight once.
cudaError_t quantize_weight_batch(const Fp8WeightEntry* entries, int64_t count, int64_t tiles, cudaStream_t stream);
// x = e4m3_to_float(q) * scale of its tile (a NaN written as 0x7fc00000).
cudaError_t dequantize_tiles(float* x, const uint8_t* q, const float* scales, Fp8Layout layout, cudaStream_t stream);
// x: [rows, cols] bf16 = dequantize_tiles' fp32 values with 1x128 tiles, rounded to nearest even (a NaN as 0x7fc0).
cudaError_t dequantize_1x128_bf16(void* x, const uint8_t* q, const float* scales, int64_t rows, int64_t cols,
                                  cudaStream_t stream);

}  // namespace hai::cuda::kernels
