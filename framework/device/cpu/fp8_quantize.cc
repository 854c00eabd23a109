#include "framework/device/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/device/fp8_quantize.h"

namespace hai::cpu {
namespace {

// The elements [row_begin, row_end) x [col_begin, col_end) of an [M, K] matrix covered by scale (tile_row, tile_col).
struct TileBounds {
  int64_t row_begin, row_end, col_begin, col_end;

  TileBounds(Fp8Tile tile, int64_t tile_row, int64_t tile_col, int64_t rows, int64_t cols)
      : row_begin(tile_row * tile.rows),
        row_end(std::min(rows, (tile_row + 1) * tile.rows)),
        col_begin(tile_col * tile.cols),
        col_end(std::min(cols, (tile_col + 1) * tile.cols)) {}
};

// NOTE: a comparison, not std::fmax: fmax returns NaN for a signalling NaN (IEEE 754-2008 maxNum), and the rule
// (framework/device/fp8_quantize.h) ignores every NaN, as the GPU's fmaxf does.
float tile_amax(const float* x, int64_t cols, const TileBounds& bounds) {
  float amax = 0.0f;
  for (int64_t r = bounds.row_begin; r < bounds.row_end; ++r) {
    for (int64_t c = bounds.col_begin; c < bounds.col_end; ++c) {
      float magnitude = std::fabs(x[r * cols + c]);
      if (magnitude > amax) amax = magnitude;
    }
  }
  return amax;
}

// Calls body(bounds, scale_index) for every tile of an [M, K] matrix, tiles in row-major order.
template <typename Body>
void for_each_tile(int64_t rows, int64_t cols, Fp8Tile tile, const Body& body) {
  int64_t tile_rows = (rows + tile.rows - 1) / tile.rows, tile_cols = (cols + tile.cols - 1) / tile.cols;
  for (int64_t tile_row = 0; tile_row < tile_rows; ++tile_row) {
    for (int64_t tile_col = 0; tile_col < tile_cols; ++tile_col) {
      body(TileBounds(tile, tile_row, tile_col, rows, cols), tile_row * tile_cols + tile_col);
    }
  }
}

}  // namespace

void quantize_tiles(const Tensor& q, const Tensor& scales, const Tensor& x, Fp8Tile tile, bool pow2_scales,
                    bool transposed) {
  const int64_t rows = x.size(0), cols = x.size(1);
  const int64_t tile_rows = (rows + tile.rows - 1) / tile.rows, tile_cols = (cols + tile.cols - 1) / tile.cols;
  const float* x_data = x.data<float>();     // [M, K]
  e4m3* q_data = q.data<e4m3>();             // [M, K], or [K, M] transposed
  float* scale_data = scales.data<float>();  // one per tile
  for_each_tile(rows, cols, tile, [&](const TileBounds& bounds, int64_t scale_index) {
    float scale = fp8_scale_from_amax(tile_amax(x_data, cols, bounds), pow2_scales);
    int64_t tile_row = scale_index / tile_cols, tile_col = scale_index % tile_cols;
    scale_data[transposed ? tile_col * tile_rows + tile_row : scale_index] = scale;
    for (int64_t r = bounds.row_begin; r < bounds.row_end; ++r) {
      for (int64_t c = bounds.col_begin; c < bounds.col_end; ++c) {
        q_data[transposed ? c * rows + r : r * cols + c].bits = float_to_e4m3(x_data[r * cols + c] / scale);
      }
    }
  });
}

void dequantize_tiles(const Tensor& x, const Tensor& q, const Tensor& scales, Fp8Tile tile) {
  const int64_t rows = x.size(0), cols = x.size(1);
  const e4m3* q_data = q.data<e4m3>();             // [M, K]
  const float* scale_data = scales.data<float>();  // one per tile
  float* x_data = x.data<float>();                 // [M, K]
  for_each_tile(rows, cols, tile, [&](const TileBounds& bounds, int64_t scale_index) {
    float scale = scale_data[scale_index];
    for (int64_t r = bounds.row_begin; r < bounds.row_end; ++r) {
      for (int64_t c = bounds.col_begin; c < bounds.col_end; ++c) {
        float value = e4m3_to_float(q_data[r * cols + c].bits) * scale;
        x_data[r * cols + c] = std::isnan(value) ? std::numeric_limits<float>::quiet_NaN() : value;
      }
    }
  });
}

}  // namespace hai::cpu
