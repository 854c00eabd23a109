#include <cuda_bf16.h>

#include <climits>

#include "framework/device/cuda/fp8_convert.cuh"
#include "framework/device/cuda/fp8_dual_quantize_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

using fp8::quantize_quad;
using fp8::ScaleDivisor;
using fp8::scale_from_amax;
using fp8::warp_max;

constexpr int kTile = 128;  // a block's tile of x is 128 x 128: one 1x128 tile per row, one 128x1 tile per column
constexpr int kWarpSize = 32;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kRowsPerWarp = kTile / kWarps;      // warp w holds tile rows 16w .. 16w + 15
constexpr int kColsPerLane = kTile / kWarpSize;   // lane l holds tile columns 4l .. 4l + 3 of each of them
constexpr int kRunBytes = kRowsPerWarp;           // a warp's bytes of a q_t line: its rows of one column
constexpr int kRunsPerLine = kTile / kRunBytes;   // a q_t line of the tile (a column of x) holds every warp's run
static_assert(kRunsPerLine == 8 && kRunBytes == 16, "the staging swizzle spreads 8 runs of 16 bytes");

__device__ bool aligned(const void* pointer, int bytes) { return reinterpret_cast<uintptr_t>(pointer) % bytes == 0; }

// A lane's 4 consecutive elements of a row of x, as loaded: fp32 in one 16-byte load, bf16 in one 8-byte load
// (widened exactly when read), or element by element up to `count` with zeros after (which leave every amax as it
// is) when the row's tile is partial or unaligned.
template <typename Element>
struct LaneQuad;

template <>
struct LaneQuad<float> {
  float4 values;

  __device__ void load(const float* x) { values = *reinterpret_cast<const float4*>(x); }
  __device__ void load_partial(const float* x, int count) {
    values = {count > 0 ? x[0] : 0.0f, count > 1 ? x[1] : 0.0f, count > 2 ? x[2] : 0.0f, count > 3 ? x[3] : 0.0f};
  }
  __device__ float operator[](int j) const {
    return j == 0 ? values.x : j == 1 ? values.y : j == 2 ? values.z : values.w;
  }
};

template <>
struct LaneQuad<__nv_bfloat16> {
  uint2 bits;  // element j in the (j % 2 == 0 ? low : high) half of word j / 2

  __device__ void load(const __nv_bfloat16* x) { bits = *reinterpret_cast<const uint2*>(x); }
  __device__ void load_partial(const __nv_bfloat16* x, int count) {
    auto at = [&](int j) -> uint32_t { return j < count ? __bfloat16_as_ushort(x[j]) : 0u; };
    bits = {at(0) | at(1) << 16, at(2) | at(3) << 16};
  }
  // A bf16 widens to fp32 by taking its 16 bits as the high half.
  __device__ float operator[](int j) const {
    uint32_t word = j < 2 ? bits.x : bits.y;
    return __uint_as_float(j % 2 == 0 ? word << 16 : word & 0xffff0000u);
  }
};

// Where run `run` of q_t line `line` is staged. NOTE: the lanes of a quarter-warp stage the same run of 8 lines 4
// apart (lane l: lines 4l .. 4l + 3); XOR-ing the run with the writing lane's index % 8 puts their 16-byte stores in
// 8 different bank groups, and the 8 runs of one line, which 8 consecutive threads read, stay in 8 different ones.
__device__ int staged_run(int line, int run) { return run ^ (line / kColsPerLane % kRunsPerLine); }

// Blocks per multiprocessor the register budget is set for. NOTE: bf16 at 3 (80 registers) has no spill, at 4 (64)
// it spills; fp32 (twice the registers of loaded data) spills at 3.
template <typename Element>
constexpr int kMinBlocksPerMultiprocessor = sizeof(Element) == 2 ? 3 : 2;

// Where a block's 128x128 tile of x lies: rows [row_begin, row_begin + height), columns [col_begin, col_begin +
// width), and whether every access of it can be vectorised (a whole tile, its rows and runs aligned).
struct TileSpan {
  int64_t tile_row, tile_col, row_begin, col_begin, tile_rows;
  int height, width;
  bool vector_loads, vector_stores, vector_runs;

  template <typename Element>
  __device__ TileSpan(const Fp8RowsAndColumns& out, const Element* x, int64_t rows, int64_t cols,
                      unsigned int tile_cols)
      : tile_row(blockIdx.x / tile_cols),
        tile_col(blockIdx.x % tile_cols),
        row_begin(tile_row * kTile),
        col_begin(tile_col * kTile),
        tile_rows((rows + kTile - 1) / kTile),
        height(static_cast<int>(min(rows - row_begin, int64_t{kTile}))),
        width(static_cast<int>(min(cols - col_begin, int64_t{kTile}))) {
    // NOTE: every row of the tile is aligned where its first is and the row stride keeps the alignment: one test.
    constexpr int kQuadBytes = sizeof(LaneQuad<Element>);
    vector_loads = width == kTile && aligned(x + row_begin * cols + col_begin, kQuadBytes) &&
                   cols * static_cast<int64_t>(sizeof(Element)) % kQuadBytes == 0;
    vector_stores = width == kTile && aligned(out.q + row_begin * cols + col_begin, 4) && cols % 4 == 0;
    vector_runs = aligned(out.q_t + col_begin * rows + row_begin, kRunBytes) && rows % kRunBytes == 0;
  }
  __device__ bool whole() const {
    return height == kTile && width == kTile && vector_loads && vector_stores && vector_runs;
  }
};

// The shared memory of a block.
struct TileScratch {
  alignas(16) float column_amax_of_warp[kWarps][kTile];  // [warp, tile column]
  alignas(16) uint8_t stage[kTile][kTile];               // [tile column, staged run of tile rows]
};

// A block's tile, read once into registers (warp w: rows 16w .. 16w + 15, lane l: columns 4l .. 4l + 3, so each
// load of a warp reads a run of one row). Each row's amax comes from a warp reduction and its 1x128 bytes go
// straight to q; each column's amax from the 8 warps' partial ones in shared memory, and its 128x1 bytes through a
// shared-memory transpose to q_t, in runs of 16 bytes. Rows and columns outside x are zeros, which leave every amax
// as it is, and are not written. kWhole: the span is whole() (every test below folds away).
template <bool kWhole, typename Element>
__device__ void quantize_tile(const Fp8RowsAndColumns& out, const Element* __restrict__ x, int64_t rows,
                              int64_t cols, unsigned int tile_cols, bool pow2_scales, const TileSpan& span,
                              TileScratch& scratch) {
  auto& column_amax_of_warp = scratch.column_amax_of_warp;
  auto& stage = scratch.stage;
  int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  int first_row = kRowsPerWarp * warp, first_col = kColsPerLane * lane;
  int64_t tile_col = span.tile_col, row_begin = span.row_begin, col_begin = span.col_begin;
  int64_t tile_row = span.tile_row, tile_rows = span.tile_rows;
  int height = kWhole ? kTile : span.height, width = kWhole ? kTile : span.width;
  bool vector_loads = kWhole || span.vector_loads, vector_stores = kWhole || span.vector_stores;
  bool vector_runs = kWhole || span.vector_runs;
  LaneQuad<Element> quads[kRowsPerWarp];  // [i]: tile row first_row + i, columns first_col .. first_col + 3
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    if (first_row + i >= height) {
      quads[i] = {};
      continue;
    }
    const Element* x_tile_row = x + (row_begin + first_row + i) * cols + col_begin;
    if (vector_loads) {
      quads[i].load(x_tile_row + first_col);
    } else {
      quads[i].load_partial(x_tile_row + first_col, width - first_col);
    }
  }

  // 1x128: a scale and 4 bytes per lane for each row.
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    if (first_row + i >= height) break;
    const LaneQuad<Element>& quad = quads[i];
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < kColsPerLane; ++j) amax = fmaxf(amax, fabsf(quad[j]));
    float scale = scale_from_amax(warp_max(amax), pow2_scales);
    int64_t row = row_begin + first_row + i;
    if (lane == 0) out.scales[row * tile_cols + tile_col] = scale;
    uint32_t bytes = quantize_quad(quad[0], quad[1], quad[2], quad[3], ScaleDivisor(scale));
    uint8_t* q_tile_row = out.q + row * cols + col_begin;
    if (vector_stores) {
      *reinterpret_cast<uint32_t*>(q_tile_row + first_col) = bytes;
    } else {
      for (int j = 0; j < kColsPerLane && first_col + j < width; ++j) {
        q_tile_row[first_col + j] = static_cast<uint8_t>(bytes >> (8 * j));
      }
    }
  }

  // 128x1: each column's amax over the warps' partial ones.
  float partial[kColsPerLane] = {};
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
#pragma unroll
    for (int j = 0; j < kColsPerLane; ++j) partial[j] = fmaxf(partial[j], fabsf(quads[i][j]));
  }
  *reinterpret_cast<float4*>(&column_amax_of_warp[warp][first_col]) = {partial[0], partial[1], partial[2], partial[3]};
  __syncthreads();
  float4 amax = {};
  for (int w = 0; w < kWarps; ++w) {
    float4 warp_amax = *reinterpret_cast<const float4*>(&column_amax_of_warp[w][first_col]);
    amax = {fmaxf(amax.x, warp_amax.x), fmaxf(amax.y, warp_amax.y), fmaxf(amax.z, warp_amax.z),
            fmaxf(amax.w, warp_amax.w)};
  }
  float column_scales[kColsPerLane] = {scale_from_amax(amax.x, pow2_scales), scale_from_amax(amax.y, pow2_scales),
                                       scale_from_amax(amax.z, pow2_scales), scale_from_amax(amax.w, pow2_scales)};
  if (warp == 0) {
    for (int j = 0; j < kColsPerLane && first_col + j < width; ++j) {
      out.scales_t[(col_begin + first_col + j) * tile_rows + tile_row] = column_scales[j];
    }
  }

  // Each of the lane's columns: its 16 rows' bytes, one run of a q_t line, staged.
#pragma unroll
  for (int j = 0; j < kColsPerLane; ++j) {
    ScaleDivisor divisor(column_scales[j]);
    uint32_t words[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      words[k] = quantize_quad(quads[4 * k][j], quads[4 * k + 1][j], quads[4 * k + 2][j], quads[4 * k + 3][j], divisor);
    }
    int line = first_col + j;
    *reinterpret_cast<uint4*>(&stage[line][kRunBytes * staged_run(line, warp)]) = {words[0], words[1], words[2],
                                                                                    words[3]};
  }
  __syncthreads();

  // q_t: 8 consecutive threads write one line's 128 bytes, 16 a thread where the run is full and aligned.
  for (int n = threadIdx.x; n < width * kRunsPerLine; n += kThreads) {
    int line = n / kRunsPerLine, run = n % kRunsPerLine, run_begin = kRunBytes * run;
    if (run_begin >= height) continue;
    const uint8_t* staged = &stage[line][kRunBytes * staged_run(line, run)];
    uint8_t* q_t_run = out.q_t + (col_begin + line) * rows + row_begin + run_begin;
    if (run_begin + kRunBytes <= height && vector_runs) {
      *reinterpret_cast<uint4*>(q_t_run) = *reinterpret_cast<const uint4*>(staged);
    } else {
      for (int k = 0; k < kRunBytes && run_begin + k < height; ++k) q_t_run[k] = staged[k];
    }
  }
}

// The partial and unaligned tiles: out of line, so that the whole tiles' code stays small.
template <typename Element>
__device__ __noinline__ void quantize_partial_tile(const Fp8RowsAndColumns& out, const Element* __restrict__ x,
                                                   int64_t rows, int64_t cols, unsigned int tile_cols,
                                                   bool pow2_scales, const TileSpan& span, TileScratch& scratch) {
  quantize_tile<false>(out, x, rows, cols, tile_cols, pow2_scales, span, scratch);
}

// One block per 128x128 tile of x (quantize_tile); the tile's row is blockIdx.x / tile_cols.
// x: [rows, cols] Element (float, or bf16 widened exactly) ->
// out.q: [rows, cols], out.scales: [rows, tile_cols], out.q_t: [cols, rows], out.scales_t: [cols, tile_rows]
template <typename Element>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerMultiprocessor<Element>)
    quantize_1x128_and_128x1_transposed_kernel(Fp8RowsAndColumns out, const Element* __restrict__ x, int64_t rows,
                                               int64_t cols, unsigned int tile_cols, bool pow2_scales) {
  __shared__ TileScratch scratch;
  TileSpan span(out, x, rows, cols, tile_cols);
  if (span.whole()) {
    quantize_tile<true>(out, x, rows, cols, tile_cols, pow2_scales, span, scratch);
  } else {
    quantize_partial_tile(out, x, rows, cols, tile_cols, pow2_scales, span, scratch);
  }
}

template <typename Element>
cudaError_t launch(const Fp8RowsAndColumns& out, const Element* x, int64_t rows, int64_t cols, bool pow2_scales,
                   cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  int64_t tile_rows = (rows + kTile - 1) / kTile, tile_cols = (cols + kTile - 1) / kTile;
  if (tile_rows * tile_cols > INT_MAX) return cudaErrorInvalidConfiguration;
  quantize_1x128_and_128x1_transposed_kernel<Element>
      <<<static_cast<unsigned int>(tile_rows * tile_cols), kThreads, 0, stream>>>(
          out, x, rows, cols, static_cast<unsigned int>(tile_cols), pow2_scales);
  return cudaGetLastError();
}

}  // namespace

cudaError_t quantize_1x128_and_128x1_transposed(const Fp8RowsAndColumns& out, const float* x, int64_t rows,
                                                int64_t cols, bool pow2_scales, cudaStream_t stream) {
  return launch(out, x, rows, cols, pow2_scales, stream);
}

cudaError_t quantize_1x128_and_128x1_transposed_bf16(const Fp8RowsAndColumns& out, const void* x, int64_t rows,
                                                     int64_t cols, bool pow2_scales, cudaStream_t stream) {
  return launch(out, static_cast<const __nv_bfloat16*>(x), rows, cols, pow2_scales, stream);
}

}  // namespace hai::cuda::kernels
