#include <cuda_bf16.h>

#include <climits>

#include "framework/device/cuda/fp8_bf16_pairs.cuh"
#include "framework/device/cuda/fp8_convert.cuh"
#include "framework/device/cuda/fp8_dual_quantize_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

using fp8::bf16x2_abs;
using fp8::bf16x2_max;
using fp8::quantize_quad;
using fp8::row_pair_amax;
using fp8::ScaleDivisor;
using fp8::scale_from_amax;
using fp8::warp_max;
using fp8::widened_half;

constexpr int kTile = 128;  // a block's tile of x is 128 x 128: one 1x128 tile per row, one 128x1 tile per column
constexpr int kWarpSize = 32;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kRowsPerWarp = kTile / kWarps;      // warp w holds tile rows 16w .. 16w + 15
constexpr int kColsPerLane = kTile / kWarpSize;   // lane l holds tile columns 4l .. 4l + 3 of each of them
constexpr int kRunBytes = kRowsPerWarp;           // a warp's bytes of a q_t line: its rows of one column
constexpr int kRunsPerLine = kTile / kRunBytes;   // a q_t line of the tile (a column of x) holds every warp's run
static_assert(kRunsPerLine == 8 && kRunBytes == 16, "the staging swizzle spreads 8 runs of 16 bytes");

__device__ bool aligned(const void* pointer, int bytes) { return reinterpret_cast<uintptr_t>(pointer) % bytes == 0; }

// A lane's 4 consecutive elements of a row of x, as loaded: fp32 in one 16-byte load, or element by element up to
// `count` with zeros after (which leave every amax as it is) when the row's tile is partial or unaligned.
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

// Where run `run` of q_t line `line` is staged. NOTE: the lanes of a quarter-warp stage the same run of 8 lines 4
// apart (lane l: lines 4l .. 4l + 3); XOR-ing the run with the writing lane's index % 8 puts their 16-byte stores in
// 8 different bank groups, and the 8 runs of one line, which 8 consecutive threads read, stay in 8 different ones.
__device__ int staged_run(int line, int run) { return run ^ (line / kColsPerLane % kRunsPerLine); }

// Blocks per multiprocessor the register budget of the fp32 kernel is set for. NOTE: it spills at 3.
constexpr int kMinBlocksPerMultiprocessor = 2;

// Where a block's 128x128 tile of x lies: rows [row_begin, row_begin + height), columns [col_begin, col_begin +
// width), and whether every access of it can be vectorised (a whole tile, its rows and runs aligned).
struct TileSpan {
  int64_t tile_row, tile_col, row_begin, col_begin;
  int height, width;
  bool vector_loads, vector_stores, vector_runs;

  template <typename Element>
  __device__ TileSpan(const Fp8RowsAndColumns& out, const Element* x, int64_t rows, int64_t cols,
                      unsigned int tile_cols)
      : tile_row(blockIdx.x / tile_cols),
        tile_col(blockIdx.x % tile_cols),
        row_begin(tile_row * kTile),
        col_begin(tile_col * kTile),
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
  int64_t tile_row = span.tile_row;
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
    if (lane == 0) out.scales[row * out.scale_strides.row + tile_col * out.scale_strides.tile] = scale;
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
      out.scales_t[(col_begin + first_col + j) * out.scale_t_strides.row + tile_row * out.scale_t_strides.tile] =
          column_scales[j];
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
// x: [rows, cols] Element (float) ->
// out.q: [rows, cols], out.scales: [rows, tile_cols], out.q_t: [cols, rows], out.scales_t: [cols, tile_rows]
// (the scales as out's strides place them)
template <typename Element>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerMultiprocessor)
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

// ---- bf16: a layout of its own ----
// Thread t of a block's 256 holds tile rows 8 * (t / 16) + [0, 8) of tile columns 8 * (t % 16) + [0, 8) as bf16
// pairs: one 16-byte load per row (a warp's load: 2 whole rows of the tile), each row's amax over the 16 threads of
// its row group (shuffles), each column's over the warp's 2 row groups (a shuffle) and the 8 warps (shared memory),
// both taken on bf16 pairs; a thread per row and per column takes the scale; the rows' e4m3 bytes go to q in
// 8-byte stores (a warp's: 2 whole rows of the tile), the columns' bytes, 4 rows a word, through a transposed stage
// to q_t in 16-byte stores.
constexpr int kBf16BlocksPerSm = 4;  // NOTE: 4 blocks of 256 threads an SM cap the registers at 64 a thread
constexpr int kThreadRows = 8;       // consecutive tile rows of a thread
constexpr int kThreadCols = 8;       // consecutive tile columns of a thread: 16 bytes of a bf16 row
constexpr int kColPairs = kThreadCols / 2;      // bf16 pairs (32-bit words) of a thread's row
constexpr int kColGroups = kTile / kThreadCols;  // threads across a tile row
constexpr int kRowGroups = kTile / kThreadRows;  // threads down a tile column
constexpr int kStageWords = kTile / 4;           // 32-bit words of a staged tile column
constexpr int kStageChunks = kTile / 16;         // 16-byte chunks of a staged tile column
static_assert(kThreads == kRowGroups * kColGroups, "a thread per 8 x 8 elements");
static_assert(kThreads == 2 * kTile, "a thread per row and one per column take the scales");
static_assert(kWarpSize == 2 * kColGroups, "a warp holds 2 row groups");
static_assert(kThreadRows == 8, "a column's 8 rows are staged as two words with one 8-byte store");

// Thread t's elements of its block's tile: tile rows first_row() + [0, 8) of tile columns first_col() + [0, 8).
struct Bf16Thread {
  int row_group = static_cast<int>(threadIdx.x / kColGroups), col_group = static_cast<int>(threadIdx.x % kColGroups);

  __device__ int first_row() const { return kThreadRows * row_group; }
  __device__ int first_col() const { return kThreadCols * col_group; }
};

// A block's 128x128 tile of x [rows, cols]: rows [row_begin, row_begin + height), columns [col_begin, col_begin +
// width), and whether its loads and stores can be vectorised.
struct Bf16Tile {
  const uint16_t* x;  // x's bf16 bits at the tile's first element
  int64_t rows, cols, tile_row, tile_col, row_begin, col_begin;
  int height, width;
  // NOTE: each holds for every row or line of the tile as it holds for x's (a stride keeps the alignment).
  bool vector_loads;  // x's rows 16-byte aligned (every thread's 8 columns are within x's or past them)
  bool vector_rows;   // q's rows 8-byte aligned
  bool vector_lines;  // q_t's lines 16-byte aligned

  __device__ Bf16Tile(const Fp8RowsAndColumns& out, const uint16_t* x, int64_t rows, int64_t cols,
                      unsigned int tile_cols)
      : rows(rows),
        cols(cols),
        tile_row(blockIdx.x / tile_cols),
        tile_col(blockIdx.x % tile_cols),
        row_begin(tile_row * kTile),
        col_begin(tile_col * kTile),
        height(static_cast<int>(min(rows - row_begin, int64_t{kTile}))),
        width(static_cast<int>(min(cols - col_begin, int64_t{kTile}))),
        vector_loads(aligned(x, 16) && cols % kThreadCols == 0),
        vector_rows(aligned(out.q, 8) && cols % kThreadCols == 0),
        vector_lines(aligned(out.q_t, 16) && rows % 16 == 0) {
    this->x = x + row_begin * cols + col_begin;
  }
  // A whole tile with every access vectorised: no test per row or element.
  __device__ bool whole() const {
    return height == kTile && width == kTile && vector_loads && vector_rows && vector_lines;
  }
};

// A thread's elements as bf16 bits: [row, column pair], the pair's even column in the low half.
using Bf16Bits = uint32_t[kThreadRows][kColPairs];

// A block's shared memory.
struct Bf16TileShared {
  uint32_t row_amax[kTile / 2];                     // [row pair]: each row's amax, bf16, the even row's low
  uint32_t column_amax_of_warp[kWarps][kTile / 2];  // [warp, column pair]: the amax over the warp's rows, bf16
  // [row group, row] and [column group, column]: division by the row's or column's scale. NOTE: the padding divisor
  // puts the 16 column divisors that a warp's column groups read at once in different banks.
  ScaleDivisor row_divisors[kRowGroups][kThreadRows + 1];
  ScaleDivisor column_divisors[kColGroups][kThreadCols + 1];
  // [tile column, row quad]: e4m3 bytes, 4 rows a word, the first in the low byte; chunks permuted (staged_word)
  alignas(16) uint32_t stage[kTile][kStageWords];
};

// The thread's elements by one 16-byte load per row. kChecked: rows past tile.height and columns past tile.width
// read as zeros (which leave every amax as it is), without a load; otherwise the tile is whole.
template <bool kChecked>
__device__ void load_rows(Bf16Bits& bits, const Bf16Tile& tile, const Bf16Thread& at) {
  const uint16_t* first = tile.x + at.first_row() * tile.cols + at.first_col();
  bool cols_within = at.first_col() < tile.width;
#pragma unroll
  for (int j = 0; j < kThreadRows; ++j) {
    uint4 loaded = make_uint4(0, 0, 0, 0);
    if (!kChecked || (cols_within && at.first_row() + j < tile.height)) {
      loaded = __ldg(reinterpret_cast<const uint4*>(first + j * tile.cols));
    }
    bits[j][0] = loaded.x;
    bits[j][1] = loaded.y;
    bits[j][2] = loaded.z;
    bits[j][3] = loaded.w;
  }
}

// The same element by element, for any cols and alignment of x.
__device__ void load_elements(Bf16Bits& bits, const Bf16Tile& tile, const Bf16Thread& at) {
#pragma unroll
  for (int j = 0; j < kThreadRows; ++j) {
#pragma unroll
    for (int p = 0; p < kColPairs; ++p) {
      uint32_t pair = 0;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        int row = at.first_row() + j, col = at.first_col() + 2 * p + half;
        if (row < tile.height && col < tile.width) {
          pair |= uint32_t{__ldg(tile.x + row * tile.cols + col)} << (16 * half);
        }
      }
      bits[j][p] = pair;
    }
  }
}

// The thread's elements of a partial or unaligned tile, zeros past its rows and columns.
__device__ void load_partial_tile(Bf16Bits& bits, const Bf16Tile& tile, const Bf16Thread& at) {
  if (tile.vector_loads) {
    load_rows<true>(bits, tile, at);
  } else {
    load_elements(bits, tile, at);
  }
}

// Each row's and each column's amax over the thread's elements, then over the threads sharing them: rows into
// shared.row_amax, columns into shared.column_amax_of_warp. max.bf16x2 of the elements' |.| from 0 (fmaxf of fabsf,
// NaNs ignored, exact as widening is); a row's pair of halves folded into one, two rows a word.
__device__ void store_amax(Bf16TileShared& shared, const Bf16Bits& bits, const Bf16Thread& at) {
  uint32_t row_pairs[kThreadRows / 2];  // [row pair]: the even row's amax low
  row_pair_amax<kColGroups>(row_pairs, bits);
  uint32_t column_pairs[kColPairs];  // [column pair]
#pragma unroll
  for (int p = 0; p < kColPairs; ++p) {
    column_pairs[p] = 0;
#pragma unroll
    for (int j = 0; j < kThreadRows; ++j) column_pairs[p] = bf16x2_max(column_pairs[p], bf16x2_abs(bits[j][p]));
    column_pairs[p] = bf16x2_max(column_pairs[p], __shfl_xor_sync(0xffffffffu, column_pairs[p], kColGroups));
  }
  if (at.col_group == 0) {
    *reinterpret_cast<uint4*>(&shared.row_amax[at.first_row() / 2]) =
        make_uint4(row_pairs[0], row_pairs[1], row_pairs[2], row_pairs[3]);
  }
  if (threadIdx.x % kWarpSize < kColGroups) {
    *reinterpret_cast<uint4*>(&shared.column_amax_of_warp[threadIdx.x / kWarpSize][kColPairs * at.col_group]) =
        make_uint4(column_pairs[0], column_pairs[1], column_pairs[2], column_pairs[3]);
  }
}

// The scales, a thread per tile column (threads 0 .. 127) and per tile row (128 .. 255): into out.scales_t and
// out.scales where they lie within x, and as divisors into shared.
__device__ void set_scales(Bf16TileShared& shared, const Fp8RowsAndColumns& out, const Bf16Tile& tile,
                           bool pow2_scales) {
  int index = static_cast<int>(threadIdx.x % kTile);
  bool high = index % 2 == 1;
  if (threadIdx.x < kTile) {
    uint32_t pair = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) pair = bf16x2_max(pair, shared.column_amax_of_warp[w][index / 2]);
    float scale = scale_from_amax(widened_half(pair, high), pow2_scales);
    const ScaleStrides& strides = out.scale_t_strides;
    if (index < tile.width) out.scales_t[(tile.col_begin + index) * strides.row + tile.tile_row * strides.tile] = scale;
    shared.column_divisors[index / kThreadCols][index % kThreadCols] = ScaleDivisor(scale);
  } else {
    float scale = scale_from_amax(widened_half(shared.row_amax[index / 2], high), pow2_scales);
    const ScaleStrides& strides = out.scale_strides;
    if (index < tile.height) out.scales[(tile.row_begin + index) * strides.row + tile.tile_col * strides.tile] = scale;
    shared.row_divisors[index / kThreadRows][index % kThreadRows] = ScaleDivisor(scale);
  }
}

// The e4m3 bytes of the thread's rows into q, 8 bytes a row (quantize_quad twice). kChecked: only rows and columns
// within x's, byte by byte where q's rows are not 8-byte aligned; otherwise the tile is whole.
template <bool kChecked>
__device__ void write_rows(const Bf16TileShared& shared, const Fp8RowsAndColumns& out, const Bf16Tile& tile,
                           const Bf16Bits& bits, const Bf16Thread& at) {
#pragma unroll
  for (int j = 0; j < kThreadRows; ++j) {
    int row = at.first_row() + j;
    if (kChecked && row >= tile.height) return;
    ScaleDivisor divisor = shared.row_divisors[at.row_group][j];
    float v[kThreadCols];
#pragma unroll
    for (int k = 0; k < kThreadCols; ++k) v[k] = widened_half(bits[j][k / 2], k % 2 == 1);
    uint2 bytes =
        make_uint2(quantize_quad(v[0], v[1], v[2], v[3], divisor), quantize_quad(v[4], v[5], v[6], v[7], divisor));
    uint8_t* q = out.q + (tile.row_begin + row) * tile.cols + tile.col_begin + at.first_col();
    if (!kChecked || (tile.vector_rows && at.first_col() < tile.width)) {
      *reinterpret_cast<uint2*>(q) = bytes;
    } else {
      for (int k = 0; k < kThreadCols && at.first_col() + k < tile.width; ++k) {
        q[k] = static_cast<uint8_t>((k < 4 ? bytes.x : bytes.y) >> (8 * (k % 4)));
      }
    }
  }
}

// NOTE: hides the bits' values from the compiler between the two quantisations, so that it widens them again for
// the second rather than keep the 64 widened floats of the first live (which spills at 64 registers).
__device__ void rewiden_afterwards(Bf16Bits& bits) {
#pragma unroll
  for (int j = 0; j < kThreadRows; ++j) {
#pragma unroll
    for (int p = 0; p < kColPairs; ++p) asm volatile("" : "+r"(bits[j][p]));
  }
}

// The word of staged tile column `col` that holds row quad `quad`. NOTE: a column's 16-byte chunks are permuted by
// an xor with its column group (mod 8), so that the column groups of a warp, which stage the same chunk of 16
// columns 8 apart at once, fill all banks twice; the chunks stay whole for the 16-byte reads of write_lines.
__device__ int staged_word(int col, int quad) { return quad ^ 4 * (col / kThreadCols % kStageChunks); }

// The e4m3 bytes of the thread's columns into shared.stage: a column's 8 rows as two words of 4 (quantize_quad),
// one 8-byte store.
__device__ void stage_columns(Bf16TileShared& shared, const Bf16Bits& bits, const Bf16Thread& at) {
#pragma unroll
  for (int k = 0; k < kThreadCols; ++k) {
    ScaleDivisor divisor = shared.column_divisors[at.col_group][k];
    float v[kThreadRows];
#pragma unroll
    for (int j = 0; j < kThreadRows; ++j) v[j] = widened_half(bits[j][k / 2], k % 2 == 1);
    int col = at.first_col() + k;
    *reinterpret_cast<uint2*>(&shared.stage[col][staged_word(col, at.first_row() / 4)]) =
        make_uint2(quantize_quad(v[0], v[1], v[2], v[3], divisor), quantize_quad(v[4], v[5], v[6], v[7], divisor));
  }
}

// The staged columns into q_t's lines, 16 bytes a thread (a warp's store: 4 whole 128-byte runs of lines).
// kChecked: only columns and rows within x's, byte by byte where a chunk is partial or the lines are not 16-byte
// aligned; otherwise the tile is whole.
template <bool kChecked>
__device__ void write_lines(const Bf16TileShared& shared, const Fp8RowsAndColumns& out, const Bf16Tile& tile) {
  constexpr int kColsPerPass = kThreads / kStageChunks;
  int chunk = static_cast<int>(threadIdx.x % kStageChunks), chunk_begin = 16 * chunk;
#pragma unroll
  for (int pass = 0; pass < kTile / kColsPerPass; ++pass) {
    int col = static_cast<int>(threadIdx.x / kStageChunks) + kColsPerPass * pass;
    if (kChecked && (col >= tile.width || chunk_begin >= tile.height)) return;
    const uint32_t* staged = &shared.stage[col][staged_word(col, 4 * chunk)];
    uint8_t* q_t = out.q_t + (tile.col_begin + col) * tile.rows + tile.row_begin + chunk_begin;
    if (!kChecked || (tile.vector_lines && chunk_begin + 16 <= tile.height)) {
      *reinterpret_cast<uint4*>(q_t) = *reinterpret_cast<const uint4*>(staged);
    } else {
      const auto* staged_bytes = reinterpret_cast<const uint8_t*>(staged);
      for (int k = 0; k < 16 && chunk_begin + k < tile.height; ++k) q_t[k] = staged_bytes[k];
    }
  }
}

// One block per 128x128 tile of x (layout above); the tile's row is blockIdx.x / tile_cols. Whole tiles take no
// test per row or element; partial and unaligned ones test each access.
// x: [rows, cols] bf16 bits ->
// out.q: [rows, cols], out.scales: [rows, tile_cols], out.q_t: [cols, rows], out.scales_t: [cols, tile_rows]
// (the scales as out's strides place them)
__global__ void __launch_bounds__(kThreads, kBf16BlocksPerSm)
    quantize_bf16_rows_and_columns_kernel(Fp8RowsAndColumns out, const uint16_t* __restrict__ x, int64_t rows,
                                          int64_t cols, unsigned int tile_cols, bool pow2_scales) {
  __shared__ Bf16TileShared shared;
  Bf16Thread at;
  Bf16Tile tile(out, x, rows, cols, tile_cols);
  bool whole = tile.whole();
  Bf16Bits bits;
  if (whole) {
    load_rows<false>(bits, tile, at);
  } else {
    load_partial_tile(bits, tile, at);
  }
  store_amax(shared, bits, at);
  __syncthreads();
  set_scales(shared, out, tile, pow2_scales);
  __syncthreads();
  if (whole) {
    write_rows<false>(shared, out, tile, bits, at);
  } else {
    write_rows<true>(shared, out, tile, bits, at);
  }
  rewiden_afterwards(bits);
  stage_columns(shared, bits, at);
  __syncthreads();
  if (whole) {
    write_lines<false>(shared, out, tile);
  } else {
    write_lines<true>(shared, out, tile);
  }
}

// One block per 128x128 tile of x.
template <typename Element>
cudaError_t launch(void (*kernel)(Fp8RowsAndColumns, const Element*, int64_t, int64_t, unsigned int, bool),
                   const Fp8RowsAndColumns& out, const Element* x, int64_t rows, int64_t cols, bool pow2_scales,
                   cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  int64_t tile_rows = (rows + kTile - 1) / kTile, tile_cols = (cols + kTile - 1) / kTile;
  if (tile_rows * tile_cols > INT_MAX) return cudaErrorInvalidConfiguration;
  kernel<<<static_cast<unsigned int>(tile_rows * tile_cols), kThreads, 0, stream>>>(
      out, x, rows, cols, static_cast<unsigned int>(tile_cols), pow2_scales);
  return cudaGetLastError();
}

}  // namespace

cudaError_t quantize_1x128_and_128x1_transposed(const Fp8RowsAndColumns& out, const float* x, int64_t rows,
                                                int64_t cols, bool pow2_scales, cudaStream_t stream) {
  return launch(quantize_1x128_and_128x1_transposed_kernel<float>, out, x, rows, cols, pow2_scales, stream);
}

cudaError_t quantize_1x128_and_128x1_transposed_bf16(const Fp8RowsAndColumns& out, const void* x, int64_t rows,
                                                     int64_t cols, bool pow2_scales, cudaStream_t stream) {
  return launch(quantize_bf16_rows_and_columns_kernel, out, static_cast<const uint16_t*>(x), rows, cols, pow2_scales,
                stream);
}

}  // namespace hai::cuda::kernels
