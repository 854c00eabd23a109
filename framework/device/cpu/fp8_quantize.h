#pragma once
// CPU reference of framework/device/fp8_quantize.h (operands already checked by the dispatcher). One tile-generic
// implementation serves the 1x128, 128x1 and 128x128 layouts, written as they are or transposed.

#include "framework/tensor/tensor.h"

namespace hai::cpu {

// Rows and columns of x covered by one scale.
struct Fp8Tile {
  int64_t rows, cols;
};

// transposed: q is [K, M] and scales [tiles along K, tiles along M] (the transposes of the plain layout).
void quantize_tiles(const Tensor& q, const Tensor& scales, const Tensor& x, Fp8Tile tile, bool pow2_scales,
                    bool transposed);
void dequantize_tiles(const Tensor& x, const Tensor& q, const Tensor& scales, Fp8Tile tile);

}  // namespace hai::cpu
