#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <climits>

#include "framework/device/cuda/fp8_bf16_pairs.cuh"
#include "framework/device/cuda/fp8_convert.cuh"
#include "framework/device/cuda/fp8_panel.cuh"
#include "framework/device/cuda/fp8_quantize_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

using fp8::float2_to_e4m3x2;
using fp8::quantize_quad;
using fp8::row_pair_amax;
using fp8::ScaleDivisor;
using fp8::scale_from_amax;
using fp8::warp_max;
using fp8::widened_half;
using fp8_panel::aligned;
using fp8_panel::ChunkDivisors;
using fp8_panel::column_amax;
using fp8_panel::k128x128Chunks;
using fp8_panel::k128x1Chunks;
using fp8_panel::kTile;
using fp8_panel::kWarps;
using fp8_panel::kWarpSize;
using fp8_panel::load_panel;
using fp8_panel::panel_rows;
using fp8_panel::PanelScales;
using fp8_panel::PanelThread;
using fp8_panel::PanelValues;
using fp8_panel::quantize_128x1_panel;
using fp8_panel::set_divisors;
using fp8_panel::store_panel;
using fp8_panel::widened;

constexpr int kCanonicalNan = 0x7fc00000;  // the CPU's quiet NaN; GPU arithmetic makes 0x7fffffff

// e4m3_to_float(bits) * scale (framework/core/dtype.cc; every e4m3 value is exact in fp16), a NaN made canonical.
__device__ float dequantize_value(uint8_t bits, float scale) {
  float value = __half2float(__half(__nv_cvt_fp8_to_halfraw(bits, __NV_E4M3))) * scale;
  return isnan(value) ? __int_as_float(kCanonicalNan) : value;
}


// The max of `value` over the block (blockDim.x a multiple of 32), returned to every thread.
__device__ float block_max(float value) {
  __shared__ float scratch[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  value = warp_max(value);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < warps ? scratch[lane] : 0.0f;
  return warp_max(value);
}

// ---- 1x128 tiles ----

constexpr int kTilesPerWarp = 4;  // 1x128 tiles of a row per warp: 64 bytes of loads in flight per lane

// Lane l's four columns 4l .. 4l + 3 of a 1x128 tile of Element (float): one 16-byte load and one 4-byte store of
// its 4 elements when the tile is full and aligned, else element by element up to the tile's width.
template <typename Element>
struct TileLane {
  int lane_begin = 4 * (threadIdx.x % kWarpSize), width;
  const Element* x_lane;
  uint8_t* q_lane;
  bool vectorised;

  // x_tile, q_tile: the tile's first element.
  __device__ TileLane(const Element* x_tile, uint8_t* q_tile, int64_t width)
      : width(static_cast<int>(width)),
        x_lane(x_tile + lane_begin),
        q_lane(q_tile + lane_begin),
        vectorised(width == kTile && aligned(x_tile, 4 * sizeof(Element)) && aligned(q_tile, 4)) {}

  // Zero beyond the tile's width, which leaves its amax unchanged.
  __device__ void load(float (&v)[4]) const {
    if (vectorised) {
      load_four(v);
    } else {
      for (int i = 0; i < 4; ++i) v[i] = lane_begin + i < width ? widened(x_lane[i]) : 0.0f;
    }
  }

  __device__ void store(uint32_t bytes) const {
    if (vectorised) {
      *reinterpret_cast<uint32_t*>(q_lane) = bytes;
    } else {
      for (int i = 0; i < 4; ++i) {
        if (lane_begin + i < width) q_lane[i] = static_cast<uint8_t>(bytes >> (8 * i));
      }
    }
  }

 private:
  __device__ void load_four(float (&v)[4]) const {
    float4 loaded = *reinterpret_cast<const float4*>(x_lane);
    v[0] = loaded.x, v[1] = loaded.y, v[2] = loaded.z, v[3] = loaded.w;
  }
};

// A warp per kTilesPerWarp consecutive 1x128 tiles of a row (their loads first, then each tile's warp-wide amax,
// scale and conversion); a block per 8 consecutive rows, its tile group blockIdx.x % tile_groups.
// NOTE: at most 32 registers (8 blocks per multiprocessor, full occupancy): on an H200, 10% faster than with the 40
// it takes unbounded, for a few bytes of spill.
// q: [rows, cols] e4m3, scales: [rows, tile_cols] <- x: [rows, cols] Element (float)
template <typename Element>
__global__ void __launch_bounds__(kThreads, 8)
    quantize_1x128_kernel(uint8_t* __restrict__ q, float* __restrict__ scales, const Element* __restrict__ x,
                          int64_t rows, int64_t cols, unsigned int tile_groups, bool pow2_scales) {
  int64_t row = static_cast<int64_t>(blockIdx.x / tile_groups) * kWarps + threadIdx.x / kWarpSize;
  if (row >= rows) return;
  int64_t tile_cols = (cols + kTile - 1) / kTile;
  int64_t first_tile = static_cast<int64_t>(blockIdx.x % tile_groups) * kTilesPerWarp;
  int tiles = static_cast<int>(min(tile_cols - first_tile, static_cast<int64_t>(kTilesPerWarp)));
  auto tile_lane = [&](int t) {
    int64_t col_begin = (first_tile + t) * kTile, offset = row * cols + col_begin;
    return TileLane<Element>(x + offset, q + offset, min(cols - col_begin, int64_t{kTile}));
  };
  float v[kTilesPerWarp][4];
#pragma unroll
  for (int t = 0; t < kTilesPerWarp; ++t) {
    if (t < tiles) tile_lane(t).load(v[t]);
  }
#pragma unroll
  for (int t = 0; t < kTilesPerWarp; ++t) {
    if (t >= tiles) break;
    float amax = 0.0f;
    for (float value : v[t]) amax = fmaxf(amax, fabsf(value));
    float scale = scale_from_amax(warp_max(amax), pow2_scales);
    if (threadIdx.x % kWarpSize == 0) scales[row * tile_cols + first_tile + t] = scale;
    tile_lane(t).store(quantize_quad(v[t][0], v[t][1], v[t][2], v[t][3], ScaleDivisor(scale)));
  }
}

// ---- 1x128 tiles of bf16: a layout of its own ----
// A warp per 8 consecutive rows and 2 adjacent 1x128 tiles of them; half-warp h holds tile 2 * pair + h, lane l of
// it (l = lane % 16) its columns 8l .. 8l + 7 of each of the 8 rows as bf16 pairs: one 16-byte load per row (a
// warp's load: 512 consecutive bytes of a row), each row's amax on bf16 pairs over the thread's columns and the
// half-warp's 16 threads (shuffles), a lane per row takes the scale, shuffled to the half-warp, and each row's e4m3
// bytes go to q in one 8-byte store per thread.
constexpr int kBf16RowBlocksPerSm = 4;  // NOTE: 4 blocks of 256 threads an SM cap the registers at 64 a thread
constexpr int kWarpRows = 8;            // consecutive rows of a warp
constexpr int kLaneCols = 8;            // consecutive columns of a lane: 16 bytes of a bf16 row
constexpr int kLanePairs = kLaneCols / 2;       // bf16 pairs (32-bit words) of a lane's row
constexpr int kTileLanes = kTile / kLaneCols;   // lanes across a tile: a half-warp
constexpr int kWarpTiles = kWarpSize / kTileLanes;  // tiles across a warp
static_assert(kWarpRows <= kTileLanes, "a lane per row takes its scale");

// A lane's elements: rows first_row + [0, 8) of tile `tile`'s columns first_col + [0, 8), as bf16 bits [row, pair].
struct RowTileLane {
  int64_t first_row, tile, first_col;
  int rows_within, cols_within;  // the lane's rows and columns within x's (0 .. 8)
  bool whole;                    // all 64 within x's, every load and the stores vectorised
};

__device__ RowTileLane row_tile_lane(const uint8_t* q, const uint16_t* x, int64_t rows, int64_t cols,
                                     int64_t tile_cols, unsigned int tile_pairs) {
  unsigned int warp = blockIdx.x * kWarps + threadIdx.x / kWarpSize;  // NOTE: the launcher checks it fits
  int lane = static_cast<int>(threadIdx.x % kWarpSize);
  RowTileLane at;
  at.first_row = static_cast<int64_t>(warp / tile_pairs) * kWarpRows;
  at.tile = static_cast<int64_t>(warp % tile_pairs) * kWarpTiles + lane / kTileLanes;
  at.first_col = at.tile * kTile + kLaneCols * (lane % kTileLanes);
  at.rows_within = static_cast<int>(min(max(rows - at.first_row, int64_t{0}), int64_t{kWarpRows}));
  at.cols_within = at.tile < tile_cols ? static_cast<int>(min(max(cols - at.first_col, int64_t{0}),
                                                             int64_t{kLaneCols}))
                                       : 0;
  at.whole = at.rows_within == kWarpRows && at.cols_within == kLaneCols && cols % kLaneCols == 0 && aligned(x, 16) &&
             aligned(q, 8);
  return at;
}

using RowBits = uint32_t[kWarpRows][kLanePairs];  // [row, column pair], the pair's even column in the low half

// The lane's elements, zeros past x's rows and columns (which leave every amax as it is): 16-byte loads where whole,
// else element by element.
__device__ void load_row_tiles(RowBits& bits, const uint16_t* x, int64_t cols, const RowTileLane& at) {
  const uint16_t* first = x + at.first_row * cols + at.first_col;
#pragma unroll
  for (int j = 0; j < kWarpRows; ++j) {
    if (at.whole) {
      uint4 loaded = __ldg(reinterpret_cast<const uint4*>(first + j * cols));
      bits[j][0] = loaded.x, bits[j][1] = loaded.y, bits[j][2] = loaded.z, bits[j][3] = loaded.w;
      continue;
    }
#pragma unroll
    for (int p = 0; p < kLanePairs; ++p) {
      uint32_t pair = 0;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        if (j < at.rows_within && 2 * p + half < at.cols_within) {
          pair |= uint32_t{__ldg(first + j * cols + 2 * p + half)} << (16 * half);
        }
      }
      bits[j][p] = pair;
    }
  }
}

// Each row's amax over the half-warp, for the row `lane % 8`: max.bf16x2 of |.| from 0 over the lane's columns (fmaxf
// of fabsf, NaNs ignored, exact as widening is), a row's halves folded (two rows a word), then over the 16 lanes.
__device__ float lane_row_amax(const RowBits& bits) {
  uint32_t row_pairs[kWarpRows / 2];  // [row pair]: the even row's amax low
  row_pair_amax<kTileLanes>(row_pairs, bits);
  int row = static_cast<int>(threadIdx.x % kWarpRows);
  uint32_t low_rows = row & 2 ? row_pairs[1] : row_pairs[0], high_rows = row & 2 ? row_pairs[3] : row_pairs[2];
  return widened_half(row & 4 ? high_rows : low_rows, row & 1);
}

// A warp per 8 rows and 2 tiles (layout above): the rows' amax and scales, then each row's e4m3 bytes (quantize_quad
// twice) with its scale shuffled from the lane that took it; 8-byte stores where whole, else byte by byte.
// q: [rows, cols] e4m3, scales: [rows, tile_cols] <- x: [rows, cols] bf16 bits
__global__ void __launch_bounds__(kThreads, kBf16RowBlocksPerSm)
    quantize_bf16_1x128_kernel(uint8_t* __restrict__ q, float* __restrict__ scales, const uint16_t* __restrict__ x,
                               int64_t rows, int64_t cols, unsigned int tile_pairs, bool pow2_scales) {
  int64_t tile_cols = (cols + kTile - 1) / kTile;
  RowTileLane at = row_tile_lane(q, x, rows, cols, tile_cols, tile_pairs);
  RowBits bits;
  load_row_tiles(bits, x, cols, at);
  float scale = scale_from_amax(lane_row_amax(bits), pow2_scales);
  int lane_row = static_cast<int>(threadIdx.x % kTileLanes);
  if (lane_row < at.rows_within && at.tile < tile_cols) {
    scales[(at.first_row + lane_row) * tile_cols + at.tile] = scale;
  }
  ScaleDivisor lane_divisor(scale);
  uint8_t* first = q + at.first_row * cols + at.first_col;
#pragma unroll
  for (int j = 0; j < kWarpRows; ++j) {
    ScaleDivisor divisor;
    divisor.scale = __shfl_sync(0xffffffffu, lane_divisor.scale, j, kTileLanes);
    divisor.reciprocal = __shfl_sync(0xffffffffu, lane_divisor.reciprocal, j, kTileLanes);
    float v[kLaneCols];
#pragma unroll
    for (int k = 0; k < kLaneCols; ++k) v[k] = widened_half(bits[j][k / 2], k % 2 == 1);
    uint2 bytes =
        make_uint2(quantize_quad(v[0], v[1], v[2], v[3], divisor), quantize_quad(v[4], v[5], v[6], v[7], divisor));
    if (at.whole) {
      *reinterpret_cast<uint2*>(first + j * cols) = bytes;
    } else if (j < at.rows_within) {
      for (int k = 0; k < at.cols_within; ++k) {
        first[j * cols + k] = static_cast<uint8_t>((k < 4 ? bytes.x : bytes.y) >> (8 * (k % 4)));
      }
    }
  }
}

// ---- 128-row panels: 128x1 and 128x128 tiles (fp8_panel.cuh) ----

// One block per 128 x (32 * k128x1Chunks) panel, a 128x1 tile per column; the panel's tile row is
// blockIdx.x / panel_cols.
// q: [rows, cols], scales: [tile_rows, cols]; transposed: q_t: [cols, rows], scales_t: [cols, tile_rows]
// <- x: [rows, cols] Element (float, or bf16 widened exactly)
template <bool kTransposed, typename Element>
__global__ void __launch_bounds__(kThreads) quantize_128x1_kernel(uint8_t* __restrict__ q, float* __restrict__ scales,
                                                                  const Element* __restrict__ x, int64_t rows,
                                                                  int64_t cols, unsigned int panel_cols,
                                                                  bool pow2_scales) {
  int64_t tile_row = blockIdx.x / panel_cols, tile_rows = (rows + kTile - 1) / kTile;
  PanelThread at(tile_row * kTile, static_cast<int64_t>(blockIdx.x % panel_cols) * kWarpSize * k128x1Chunks);
  PanelScales tile_row_scales = kTransposed ? PanelScales{scales, tile_row, tile_rows}
                                            : PanelScales{scales, tile_row * cols, 1};
  quantize_128x1_panel<kTransposed>(q, tile_row_scales, panel_rows(x, rows, at), rows, cols, pow2_scales, at);
}

// One block per 128x128 tile; the tile's row is blockIdx.x / tile_cols.
// q: [rows, cols], scales: [tile_rows, tile_cols]; transposed: q_t: [cols, rows], scales_t: [tile_cols, tile_rows]
// <- x: [rows, cols]
template <bool kTransposed>
__global__ void __launch_bounds__(kThreads) quantize_128x128_kernel(uint8_t* __restrict__ q,
                                                                    float* __restrict__ scales,
                                                                    const float* __restrict__ x, int64_t rows,
                                                                    int64_t cols, unsigned int tile_cols,
                                                                    bool pow2_scales) {
  int64_t tile_row = blockIdx.x / tile_cols, tile_col = blockIdx.x % tile_cols;
  int64_t tile_rows = (rows + kTile - 1) / kTile;
  PanelThread at(tile_row * kTile, tile_col * kTile);
  constexpr int kChunks = k128x128Chunks;
  PanelValues<kChunks> values;
  load_panel<kChunks>(values, panel_rows(x, rows, at), cols, at);
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < kChunks; ++j) amax = fmaxf(amax, column_amax<kChunks>(values, j));
  float scale = scale_from_amax(block_max(amax), pow2_scales);
  if (threadIdx.x == 0) scales[kTransposed ? tile_col * tile_rows + tile_row : tile_row * tile_cols + tile_col] = scale;
  ChunkDivisors<kChunks> divisors;
  set_divisors<kChunks>(divisors, scale);
  store_panel<kChunks, kTransposed>(q, values, divisors, rows, cols, at);
}

// One block per 128x128 tile of a batch of weights: the tile's weight found by a binary search over the entries'
// first tiles, then quantize_128x128_kernel's work, written both as stored and transposed.
__global__ void __launch_bounds__(kThreads, 3) quantize_weight_batch_kernel(const Fp8WeightEntry* __restrict__ entries,
                                                                         int64_t count) {
  auto tile = static_cast<int64_t>(blockIdx.x);
  int64_t low = 0, high = count - 1;  // the last entry whose first tile is <= tile
  while (low < high) {
    int64_t middle = (low + high + 1) / 2;
    if (entries[middle].first_tile <= tile) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  const Fp8WeightEntry entry = entries[low];
  int64_t tile_rows = (entry.rows + kTile - 1) / kTile, tile_cols = (entry.cols + kTile - 1) / kTile;
  int64_t tile_row = (tile - entry.first_tile) / tile_cols, tile_col = (tile - entry.first_tile) % tile_cols;
  PanelThread at(tile_row * kTile, tile_col * kTile);
  constexpr int kChunks = k128x128Chunks;
  PanelValues<kChunks> values;
  load_panel<kChunks>(values, panel_rows(entry.x, entry.rows, at), entry.cols, at);
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < kChunks; ++j) amax = fmaxf(amax, column_amax<kChunks>(values, j));
  float scale = scale_from_amax(block_max(amax), false);
  if (threadIdx.x == 0) {
    entry.scales[tile_row * tile_cols + tile_col] = scale;
    entry.scales_t[tile_col * tile_rows + tile_row] = scale;
  }
  ChunkDivisors<kChunks> divisors;
  set_divisors<kChunks>(divisors, scale);
  store_panel<kChunks, false>(entry.q, values, divisors, entry.rows, entry.cols, at);
  store_panel<kChunks, true>(entry.q_t, values, divisors, entry.rows, entry.cols, at);
}

// ---- any other tile shape ----

// The elements of tile `tile_index` (tile row-major): rows [row_begin, row_end), columns [col_begin, col_end).
struct Tile {
  int64_t tile_row, tile_col, row_begin, col_begin, height, width;

  __device__ Tile(const Fp8Layout& layout, int64_t tile_cols, int64_t tile_index)
      : tile_row(tile_index / tile_cols),
        tile_col(tile_index % tile_cols),
        row_begin(tile_row * layout.tile_rows),
        col_begin(tile_col * layout.tile_cols),
        height(min(layout.rows, row_begin + layout.tile_rows) - row_begin),
        width(min(layout.cols, col_begin + layout.tile_cols) - col_begin) {}
};

// One block per tile: the block's amax, then every element divided by the tile's scale.
__global__ void quantize_tiles_kernel(uint8_t* q, float* scales, const float* x, Fp8Layout layout, bool pow2_scales,
                                      bool transposed) {
  int64_t tile_rows = (layout.rows + layout.tile_rows - 1) / layout.tile_rows;
  int64_t tile_cols = (layout.cols + layout.tile_cols - 1) / layout.tile_cols;
  Tile tile(layout, tile_cols, blockIdx.x);
  int64_t elements = tile.height * tile.width;
  float amax = 0.0f;
  for (int64_t i = threadIdx.x; i < elements; i += blockDim.x) {
    amax = fmaxf(amax, fabsf(x[(tile.row_begin + i / tile.width) * layout.cols + tile.col_begin + i % tile.width]));
  }
  float scale = scale_from_amax(block_max(amax), pow2_scales);
  if (threadIdx.x == 0) {
    scales[transposed ? tile.tile_col * tile_rows + tile.tile_row : tile.tile_row * tile_cols + tile.tile_col] = scale;
  }
  for (int64_t i = threadIdx.x; i < elements; i += blockDim.x) {
    int64_t r = tile.row_begin + i / tile.width, c = tile.col_begin + i % tile.width;
    q[transposed ? c * layout.rows + r : r * layout.cols + c] =
        static_cast<uint8_t>(float2_to_e4m3x2(__fdiv_rn(x[r * layout.cols + c], scale), 0.0f));
  }
}

// ---- dequantisation ----

// Where a dequantised value goes: fp32 as it is, or bf16 rounded to nearest even (a NaN as 0x7fc0, the CPU's
// rounding of the canonical NaN dequantize_value makes).
__device__ void store_dequantized(float* x, float value) { *x = value; }
__device__ void store_dequantized(__nv_bfloat16* x, float value) {
  *x = isnan(value) ? __ushort_as_bfloat16(0x7fc0) : __float2bfloat16_rn(value);
}

// Four consecutive dequantised values, in one 16-byte (fp32) or 8-byte (bf16) store.
__device__ void store_four(float* x, const float (&values)[4]) {
  *reinterpret_cast<float4*>(x) = {values[0], values[1], values[2], values[3]};
}
__device__ void store_four(__nv_bfloat16* x, const float (&values)[4]) {
  __nv_bfloat16 rounded[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) store_dequantized(&rounded[i], values[i]);
  *reinterpret_cast<uint2*>(x) = *reinterpret_cast<const uint2*>(rounded);
}

// A thread per 4 consecutive columns of a row (one 4-byte load of q and one store of x's 4 elements when aligned):
// columns along the grid's x, rows along its y (strided).
// x: [rows, cols] Output (float, or bf16 rounded) <- q: [rows, cols] e4m3, scales: [ceil(rows / kTileRows),
// ceil(cols / kTileCols)]
template <int kTileRows, int kTileCols, typename Output>
__global__ void __launch_bounds__(kThreads) dequantize_kernel(Output* __restrict__ x, const uint8_t* __restrict__ q,
                                                              const float* __restrict__ scales, int64_t rows,
                                                              int64_t cols) {
  int64_t col = 4 * (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x);
  if (col >= cols) return;
  int64_t tile_cols = (cols + kTileCols - 1) / kTileCols;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const float* row_scales = scales + row / kTileRows * tile_cols;
    int64_t offset = row * cols + col;
    if (col + 4 <= cols && aligned(q + offset, 4) && aligned(x + offset, 4 * sizeof(Output))) {
      uint32_t bytes = *reinterpret_cast<const uint32_t*>(q + offset);
      float values[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        values[i] = dequantize_value(static_cast<uint8_t>(bytes >> (8 * i)), row_scales[(col + i) / kTileCols]);
      }
      store_four(x + offset, values);
    } else {
      for (int64_t c = col; c < min(col + 4, cols); ++c) {
        store_dequantized(x + row * cols + c, dequantize_value(q[row * cols + c], row_scales[c / kTileCols]));
      }
    }
  }
}

// Any tile shape: a grid-stride loop over the elements.
__global__ void dequantize_tiles_kernel(float* x, const uint8_t* q, const float* scales, Fp8Layout layout) {
  int64_t tile_cols = (layout.cols + layout.tile_cols - 1) / layout.tile_cols;
  int64_t n = layout.rows * layout.cols;
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    int64_t r = i / layout.cols, c = i % layout.cols;
    x[i] = dequantize_value(q[i], scales[(r / layout.tile_rows) * tile_cols + c / layout.tile_cols]);
  }
}

// ---- launchers ----

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool has_tiles(const Fp8Layout& layout, int64_t tile_rows, int64_t tile_cols) {
  return layout.tile_rows == tile_rows && layout.tile_cols == tile_cols;
}

// A 1D grid of `blocks` blocks, or false when CUDA's limit on it (2^31 - 1) is exceeded.
bool fits_grid(int64_t blocks) { return blocks <= INT_MAX; }

template <typename Kernel, typename Element>
cudaError_t launch_quantize(Kernel kernel, int64_t blocks, unsigned int blocks_per_row, uint8_t* q, float* scales,
                            const Element* x, const Fp8Layout& layout, bool pow2_scales, cudaStream_t stream) {
  if (!fits_grid(blocks)) return cudaErrorInvalidConfiguration;
  kernel<<<static_cast<unsigned int>(blocks), kThreads, 0, stream>>>(q, scales, x, layout.rows, layout.cols,
                                                                     blocks_per_row, pow2_scales);
  return cudaGetLastError();
}

template <int kTileRows, int kTileCols, typename Output>
cudaError_t launch_dequantize(Output* x, const uint8_t* q, const float* scales, const Fp8Layout& layout,
                              cudaStream_t stream) {
  constexpr int64_t kMaxGridRows = 65535;
  dim3 grid(static_cast<unsigned int>(ceil_div(layout.cols, 4 * kThreads)),
            static_cast<unsigned int>(min(layout.rows, kMaxGridRows)));
  dequantize_kernel<kTileRows, kTileCols><<<grid, kThreads, 0, stream>>>(x, q, scales, layout.rows, layout.cols);
  return cudaGetLastError();
}

}  // namespace

cudaError_t quantize_tiles(uint8_t* q, float* scales, const float* x, Fp8Layout layout, bool pow2_scales,
                           bool transposed, cudaStream_t stream) {
  if (layout.rows == 0 || layout.cols == 0) return cudaSuccess;
  int64_t tile_rows = ceil_div(layout.rows, kTile), tile_cols = ceil_div(layout.cols, kTile);
  if (has_tiles(layout, 1, kTile) && !transposed) {
    int64_t tile_groups = ceil_div(tile_cols, kTilesPerWarp);
    return launch_quantize(quantize_1x128_kernel<float>, ceil_div(layout.rows, kWarps) * tile_groups,
                           static_cast<unsigned int>(tile_groups), q, scales, x, layout, pow2_scales, stream);
  }
  if (has_tiles(layout, kTile, 1)) {
    int64_t panel_cols = ceil_div(layout.cols, kWarpSize * k128x1Chunks);
    return launch_quantize(transposed ? quantize_128x1_kernel<true, float> : quantize_128x1_kernel<false, float>,
                           tile_rows * panel_cols, static_cast<unsigned int>(panel_cols), q, scales, x, layout,
                           pow2_scales, stream);
  }
  if (has_tiles(layout, kTile, kTile)) {
    return launch_quantize(transposed ? quantize_128x128_kernel<true> : quantize_128x128_kernel<false>,
                           tile_rows * tile_cols, static_cast<unsigned int>(tile_cols), q, scales, x, layout,
                           pow2_scales, stream);
  }
  int64_t tiles = ceil_div(layout.rows, layout.tile_rows) * ceil_div(layout.cols, layout.tile_cols);
  if (!fits_grid(tiles)) return cudaErrorInvalidConfiguration;
  quantize_tiles_kernel<<<static_cast<unsigned int>(tiles), kThreads, 0, stream>>>(q, scales, x, layout, pow2_scales,
                                                                                  transposed);
  return cudaGetLastError();
}

cudaError_t quantize_1x128_bf16(uint8_t* q, float* scales, const void* x, int64_t rows, int64_t cols,
                                bool pow2_scales, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  int64_t tile_pairs = ceil_div(ceil_div(cols, kTile), kWarpTiles);
  int64_t warps = ceil_div(rows, kWarpRows) * tile_pairs;
  if (warps > UINT_MAX) return cudaErrorInvalidConfiguration;
  return launch_quantize(quantize_bf16_1x128_kernel, ceil_div(warps, kWarps), static_cast<unsigned int>(tile_pairs),
                         q, scales, static_cast<const uint16_t*>(x), Fp8Layout{rows, cols, 1, kTile}, pow2_scales,
                         stream);
}

cudaError_t quantize_128x1_transposed_bf16(uint8_t* q_t, float* scales_t, const void* x, int64_t rows, int64_t cols,
                                          bool pow2_scales, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  int64_t panel_cols = ceil_div(cols, kWarpSize * k128x1Chunks);
  return launch_quantize(quantize_128x1_kernel<true, __nv_bfloat16>, ceil_div(rows, kTile) * panel_cols,
                         static_cast<unsigned int>(panel_cols), q_t, scales_t, static_cast<const __nv_bfloat16*>(x),
                         Fp8Layout{rows, cols, kTile, 1}, pow2_scales, stream);
}

cudaError_t quantize_weight_batch(const Fp8WeightEntry* entries, int64_t count, int64_t tiles, cudaStream_t stream) {
  if (count == 0 || tiles == 0) return cudaSuccess;
  if (!fits_grid(tiles)) return cudaErrorInvalidConfiguration;
  quantize_weight_batch_kernel<<<static_cast<unsigned int>(tiles), kThreads, 0, stream>>>(entries, count);
  return cudaGetLastError();
}

cudaError_t dequantize_tiles(float* x, const uint8_t* q, const float* scales, Fp8Layout layout, cudaStream_t stream) {
  int64_t n = layout.rows * layout.cols;
  if (n == 0) return cudaSuccess;
  if (has_tiles(layout, 1, kTile)) return launch_dequantize<1, kTile>(x, q, scales, layout, stream);
  if (has_tiles(layout, kTile, 1)) return launch_dequantize<kTile, 1>(x, q, scales, layout, stream);
  if (has_tiles(layout, kTile, kTile)) return launch_dequantize<kTile, kTile>(x, q, scales, layout, stream);
  dequantize_tiles_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, q, scales, layout);
  return cudaGetLastError();
}

cudaError_t dequantize_1x128_bf16(void* x, const uint8_t* q, const float* scales, int64_t rows, int64_t cols,
                                  cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  return launch_dequantize<1, kTile>(static_cast<__nv_bfloat16*>(x), q, scales, Fp8Layout{rows, cols, 1, kTile},
                                     stream);
}

}  // namespace hai::cuda::kernels
