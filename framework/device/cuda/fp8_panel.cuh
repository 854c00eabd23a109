#pragma once
// The 128-row panels of the CUDA fp8 quantisation kernels (fp8_quantize_kernels.cu, fp8_expert_tokens_kernels.cu):
// a block holds a 128 x (32 * chunks) panel of a matrix in registers, takes each column's (128x1) or the panel's
// (128x128) scale and writes the e4m3 bytes as stored or transposed through shared memory. Bit for bit the CPU's
// quantisation (framework/device/fp8_quantize.h).

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/fp8_convert.cuh"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels::fp8_panel {

using fp8::quantize_pair;
using fp8::ScaleDivisor;
using fp8::scale_from_amax;

inline constexpr int kTile = 128;  // the long side of every tile shape
inline constexpr int kWarpSize = 32;
inline constexpr int kWarps = kThreads / kWarpSize;  // warps per block
inline constexpr int kRowsPerWarp = kTile / kWarps;  // rows of a 128-row panel held by each warp

__device__ inline bool aligned(const void* pointer, int bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % bytes == 0;
}

// An element of x as fp32: itself, or a bf16 widened exactly.
__device__ inline float widened(float value) { return value; }
__device__ inline float widened(__nv_bfloat16 value) { return __bfloat162float(value); }

inline constexpr int k128x1Chunks = 2;                    // 32-column chunks of a 128x1 block's panel
inline constexpr int k128x128Chunks = kTile / kWarpSize;  // a 128x128 block's panel is its tile

// Thread (warp w, lane l) of a block over the 128 x (32 * chunks) panel at (row_begin, col_begin) holds the
// elements at panel rows w + 8 i (i < 16) and panel columns l + 32 j (j < chunks): every warp reads runs of 32
// consecutive elements of a row.
struct PanelThread {
  int64_t row_begin, col_begin;
  int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;

  __device__ PanelThread(int64_t row_begin, int64_t col_begin) : row_begin(row_begin), col_begin(col_begin) {}
  __device__ int row(int i) const { return warp + kWarps * i; }
  __device__ int col(int j) const { return lane + kWarpSize * j; }
};

template <int kChunks>
using PanelValues = float[kRowsPerWarp][kChunks];  // [i, j] as PanelThread places them
template <int kChunks>
using ChunkScales = float[kChunks];  // the scale of each of a thread's columns
template <int kChunks>
using ChunkDivisors = ScaleDivisor[kChunks];  // division by each of them

// divisors[j] <- division by scales[j], or by `scale` for every chunk.
template <int kChunks>
__device__ void set_divisors(ChunkDivisors<kChunks>& divisors, const ChunkScales<kChunks>& scales) {
#pragma unroll
  for (int j = 0; j < kChunks; ++j) divisors[j] = ScaleDivisor(scales[j]);
}
template <int kChunks>
__device__ void set_divisors(ChunkDivisors<kChunks>& divisors, float scale) {
  ScaleDivisor divisor(scale);
#pragma unroll
  for (int j = 0; j < kChunks; ++j) divisors[j] = divisor;
}

// Where a panel's rows come from: panel row i is row first + i of x [*, cols] (Element float, or bf16 widened
// exactly) while first + i < end; the rest read as zeros.
template <typename Element>
struct PanelRows {
  const Element* x;
  int64_t first, end;
};

// The rows of x [rows, cols] under the panel at `at`.
template <typename Element>
__device__ PanelRows<Element> panel_rows(const Element* x, int64_t rows, const PanelThread& at) {
  return {x, at.row_begin, rows};
}

// The thread's elements of the panel's rows; zero outside them, which leaves every amax unchanged.
template <int kChunks, typename Element>
__device__ void load_panel(PanelValues<kChunks>& values, PanelRows<Element> source, int64_t cols,
                           const PanelThread& at) {
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    int64_t r = source.first + at.row(i);
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      int64_t c = at.col_begin + at.col(j);
      values[i][j] = r < source.end && c < cols ? widened(source.x[r * cols + c]) : 0.0f;
    }
  }
}

template <int kChunks>
__device__ float column_amax(const PanelValues<kChunks>& values, int j) {
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) amax = fmaxf(amax, fabsf(values[i][j]));
  return amax;
}

// Each panel column's 128x1 scale, from the amax over the 8 warps' rows of it.
template <int kChunks>
__device__ void column_scales(ChunkScales<kChunks>& scales, const PanelValues<kChunks>& values, bool pow2_scales) {
  __shared__ float partial[kWarps][kWarpSize * kChunks];  // [warp, panel column]
  int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
#pragma unroll
  for (int j = 0; j < kChunks; ++j) partial[warp][lane + kWarpSize * j] = column_amax<kChunks>(values, j);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kChunks; ++j) {
    float amax = 0.0f;
    for (int w = 0; w < kWarps; ++w) amax = fmaxf(amax, partial[w][lane + kWarpSize * j]);
    scales[j] = scale_from_amax(amax, pow2_scales);
  }
}

// Quantises the thread's elements (column j divided as divisors[j] says) into q [rows, cols], or q_t [cols, rows]
// transposed.
// The bytes are staged in shared memory so that the block then writes whole runs of q's rows (of q_t's rows
// transposed), 4 bytes a thread when a run is full and aligned.
template <int kChunks, bool kTransposed>
__device__ void store_panel(uint8_t* __restrict__ q, const PanelValues<kChunks>& values,
                            const ChunkDivisors<kChunks>& divisors, int64_t rows, int64_t cols,
                            const PanelThread& at) {
  // A line is the panel's run of a q row (a panel row) or of a q_t row (a panel column). NOTE: 4 bytes of padding
  // per line put the bytes that a warp stages transposed, one per line, in 32 different banks.
  constexpr int kPanelCols = kWarpSize * kChunks;
  constexpr int kLines = kTransposed ? kPanelCols : kTile, kLineBytes = kTransposed ? kTile : kPanelCols;
  __shared__ alignas(4) uint8_t stage[kLines][kLineBytes + 4];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; i += 2) {
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      uint32_t pair = quantize_pair(values[i][j], values[i + 1][j], divisors[j]);
      for (int k = 0; k < 2; ++k) {
        int row = at.row(i + k), col = at.col(j);
        (kTransposed ? stage[col][row] : stage[row][col]) = static_cast<uint8_t>(pair >> (8 * k));
      }
    }
  }
  __syncthreads();
  int64_t height = min(rows - at.row_begin, int64_t{kTile}), width = min(cols - at.col_begin, int64_t{kPanelCols});
  int64_t lines = kTransposed ? width : height, line_bytes = kTransposed ? height : width;
  constexpr int kThreadsPerLine = kLineBytes / 4;
  int begin = 4 * (threadIdx.x % kThreadsPerLine);
  for (int line = threadIdx.x / kThreadsPerLine; line < lines; line += kThreads / kThreadsPerLine) {
    uint8_t* q_line = q + (kTransposed ? (at.col_begin + line) * rows + at.row_begin
                                       : (at.row_begin + line) * cols + at.col_begin);
    if (line_bytes == kLineBytes && aligned(q_line, 4)) {
      *reinterpret_cast<uint32_t*>(q_line + begin) = *reinterpret_cast<const uint32_t*>(&stage[line][begin]);
    } else {
      for (int k = begin; k < min(begin + 4, static_cast<int>(line_bytes)); ++k) q_line[k] = stage[line][k];
    }
  }
}

// Where the 128x1 scales of a panel's tile row go: column c's at base[first + c * stride].
struct PanelScales {
  float* base;
  int64_t first, stride;
};

// The 128x1 quantisation of the panel at `at` of a [rows, cols] matrix whose panel rows come from `source`: each
// column's scale into `scales`, its bytes into q [rows, cols], or q_t [cols, rows] transposed.
template <bool kTransposed, typename Element>
__device__ void quantize_128x1_panel(uint8_t* __restrict__ q, PanelScales scales, PanelRows<Element> source,
                                     int64_t rows, int64_t cols, bool pow2_scales, const PanelThread& at) {
  constexpr int kChunks = k128x1Chunks;
  PanelValues<kChunks> values;
  load_panel<kChunks>(values, source, cols, at);
  ChunkScales<kChunks> chunk_scales;
  column_scales<kChunks>(chunk_scales, values, pow2_scales);
#pragma unroll
  for (int j = 0; j < kChunks; ++j) {
    int64_t col = at.col_begin + at.col(j);
    if (at.warp == 0 && col < cols) scales.base[scales.first + col * scales.stride] = chunk_scales[j];
  }
  ChunkDivisors<kChunks> divisors;
  set_divisors<kChunks>(divisors, chunk_scales);
  store_panel<kChunks, kTransposed>(q, values, divisors, rows, cols, at);
}

}  // namespace hai::cuda::kernels::fp8_panel
