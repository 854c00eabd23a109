#pragma once
// CUDA implementation of framework/device/fp8_quantize.h (operands already checked by the dispatcher), bit for bit
// the CPU reference: the same amax, the same IEEE division for the scale and for x / scale, the same e4m3 rounding.

#include "framework/tensor/tensor.h"

namespace hai::cuda {

// Rows and columns of x covered by one scale.
struct Fp8TileShape {
  int64_t rows, cols;
};

// transposed: q is [K, M] and scales [tiles along K, tiles along M].
void quantize_tiles(const Tensor& q, const Tensor& scales, const Tensor& x, Fp8TileShape tile, bool pow2_scales,
                    bool transposed, Stream stream);
// 1x128 tiles of a bf16 x, widened exactly.
void quantize_1x128_bf16(const Tensor& q, const Tensor& scales, const Tensor& x, bool pow2_scales, Stream stream);
// 128x1 tiles of a bf16 x, widened exactly, written transposed (q_t: [K, M], scales_t: [K, ceil(M / 128)]).
void quantize_128x1_transposed_bf16(const Tensor& q_t, const Tensor& scales_t, const Tensor& x, bool pow2_scales,
                                    Stream stream);
// quantize_1x128_bf16 (or quantize_tiles' 1x128 tiles) and quantize_128x1_transposed_bf16 (or quantize_tiles' 128x1
// tiles, transposed) of one x, fp32 or bf16, in one kernel that reads x once; column_major: both scale tensors
// in Fp8ScaleOrder::column_major.
void quantize_1x128_and_128x1_transposed(const Tensor& q, const Tensor& scales, const Tensor& q_t,
                                         const Tensor& scales_t, const Tensor& x, bool pow2_scales,
                                         bool column_major, Stream stream);
// destination [C, R] <- source [R, C]^T, fp32.
void transpose_fp8_scales(const Tensor& destination, const Tensor& source, Stream stream);
void dequantize_tiles(const Tensor& x, const Tensor& q, const Tensor& scales, Fp8TileShape tile, Stream stream);

}  // namespace hai::cuda
