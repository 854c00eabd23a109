#pragma once
// The tensor-core main loop of the grouped GEMM: a 128 x 128 fp32 block tile of op(A) @ op(B) over a reduction of
// any length, bf16 operands staged through shared memory by a 4-stage cp.async pipeline, fragments loaded with
// ldmatrix, products by mma.sync m16n8k16 (bf16 in, fp32 accumulate). 4 warps in a 2 x 2 grid, 64 x 64 each;
// inside a stage, the fragments of the next 16-deep slice are loaded before the products of the current one.
//
// Each operand tile is [128 outer, depth]: outer indexes the output (rows of op(A), columns of op(B)), depth the
// reduction. In global memory an operand is either depth-contiguous (x rows, W [N, K] rows) or outer-contiguous
// (W [K, N] rows, d_y and x read column-wise by the weight gradient); shared memory keeps the global layout
// (padded by 8 elements a row so that ldmatrix hits every bank once) and outer-contiguous tiles are transposed
// by ldmatrix.trans. Out-of-range chunks of 8 elements are zero-filled, so callers must guarantee that the limits
// are multiples of 8 along the contiguous dimension and that rows start 16-byte aligned.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/mma_sm80.cuh"

namespace hai::cuda::kernels::mma {

inline constexpr int kTile = 128;    // outer extent of a block tile (both operands)
inline constexpr int kDepth = 64;    // reduction consumed per pipeline stage
inline constexpr int kStages = 3;
inline constexpr int kThreads = 128;
inline constexpr int kWarpTile = 64;
inline constexpr int kPad = 8;       // elements after each shared-memory row

using bf16 = __nv_bfloat16;

template <bool kDepthContiguous>
struct SharedTile {
  // depth-contiguous: [kTile outer][kDepth + kPad]; outer-contiguous: [kDepth][kTile + kPad]
  static constexpr int kRowLength = kDepthContiguous ? kDepth + kPad : kTile + kPad;
  static constexpr int kElements = kDepthContiguous ? kTile * kRowLength : kDepth * kRowLength;
};

template <bool kADepthContiguous, bool kBDepthContiguous>
inline constexpr int kStageElements =
    SharedTile<kADepthContiguous>::kElements + SharedTile<kBDepthContiguous>::kElements;

template <bool kADepthContiguous, bool kBDepthContiguous>
inline constexpr int kSharedBytes =
    kStages * kStageElements<kADepthContiguous, kBDepthContiguous> * static_cast<int>(sizeof(bf16));

// One operand of a block: element (outer o, depth d) is origin[o * stride + d] when depth-contiguous,
// origin[d * stride + o] when outer-contiguous; elements with o >= outer_limit or d >= depth_limit read as 0.
struct OperandSource {
  const bf16* origin;
  int64_t stride;
  int64_t outer_limit;
  int64_t depth_limit;
};

// The block's fp32 accumulators: per thread 4 m16 tiles x 8 n8 tiles x 4 values (mma's C fragment layout).
struct Accumulators {
  float values[4][8][4];
};

// One warp's operand fragments of a 16-deep slice.
struct Fragments {
  uint32_t a[4][4];  // 4 m16 x k16 tiles
  uint32_t b[8][2];  // 8 k16 x n8 tiles
};

// Queues the copies of depth [depth_begin, depth_begin + kDepth) of an operand's tile: 512 chunks of 8 elements,
// 4 per thread.
template <bool kDepthContiguous>
__device__ inline void load_tile(bf16* tile, const OperandSource& source, int64_t depth_begin) {
  constexpr int kRowLength = SharedTile<kDepthContiguous>::kRowLength;
  constexpr int kChunksPerRow = kDepthContiguous ? kDepth / 8 : kTile / 8;
#pragma unroll
  for (int i = 0; i < kTile * kDepth / 8 / kThreads; ++i) {
    int chunk = static_cast<int>(threadIdx.x) + i * kThreads;
    int row = chunk / kChunksPerRow;                // shared-memory row: outer or depth
    int column = (chunk % kChunksPerRow) * 8;       // first element of the chunk in that row
    int64_t outer = kDepthContiguous ? row : column;
    int64_t depth = depth_begin + (kDepthContiguous ? column : row);
    bool valid = outer < source.outer_limit && depth < source.depth_limit;
    const bf16* element = kDepthContiguous ? source.origin + outer * source.stride + depth
                                           : source.origin + depth * source.stride + outer;
    sm80::copy_16_bytes_async(tile + row * kRowLength + column, valid ? element : source.origin, valid);
  }
}

// A fragments of the warp's 4 m16 tiles at reduction offset depth (0 or 16 inside the stage).
template <bool kDepthContiguous>
__device__ inline void load_a_fragments(uint32_t (&a)[4][4], const bf16* tile, int warp_outer, int depth) {
  constexpr int kRowLength = SharedTile<kDepthContiguous>::kRowLength;
  int lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    int outer = warp_outer + m * 16;
    if constexpr (kDepthContiguous) {
      sm80::load_matrix_x4(a[m], tile + (outer + lane % 16) * kRowLength + depth + (lane / 16) * 8);
    } else {
      sm80::load_matrix_x4_transposed(a[m], tile + (depth + lane % 8 + (lane / 16) * 8) * kRowLength + outer +
                                                ((lane / 8) % 2) * 8);
    }
  }
}

// B fragments of the warp's 8 n8 tiles (two per ldmatrix) at reduction offset depth.
template <bool kDepthContiguous>
__device__ inline void load_b_fragments(uint32_t (&b)[8][2], const bf16* tile, int warp_outer, int depth) {
  constexpr int kRowLength = SharedTile<kDepthContiguous>::kRowLength;
  int lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int pair = 0; pair < 4; ++pair) {
    int outer = warp_outer + pair * 16;
    uint32_t registers[4];
    if constexpr (kDepthContiguous) {
      sm80::load_matrix_x4(registers,
                           tile + (outer + lane % 8 + (lane / 16) * 8) * kRowLength + depth + ((lane / 8) % 2) * 8);
    } else {
      sm80::load_matrix_x4_transposed(
          registers, tile + (depth + lane % 8 + ((lane / 8) % 2) * 8) * kRowLength + outer + (lane / 16) * 8);
    }
    b[2 * pair][0] = registers[0];
    b[2 * pair][1] = registers[1];
    b[2 * pair + 1][0] = registers[2];
    b[2 * pair + 1][1] = registers[3];
  }
}

template <bool kADepthContiguous, bool kBDepthContiguous>
__device__ inline void load_fragments(Fragments& fragments, const bf16* stage, int a_elements, int row, int column,
                                      int depth) {
  load_a_fragments<kADepthContiguous>(fragments.a, stage, row, depth);
  load_b_fragments<kBDepthContiguous>(fragments.b, stage + a_elements, column, depth);
}

// The warp's row and column offsets inside the block tile.
__device__ inline int warp_row() { return (static_cast<int>(threadIdx.x) / 32 / 2) * kWarpTile; }
__device__ inline int warp_column() { return (static_cast<int>(threadIdx.x) / 32 % 2) * kWarpTile; }

// accumulators (zeroed here) <- op(A) tile @ op(B) tile over depth [0, depth). shared: kSharedBytes of the block.
template <bool kADepthContiguous, bool kBDepthContiguous>
__device__ inline void multiply_tiles(Accumulators& accumulators, const OperandSource& a, const OperandSource& b,
                                      int64_t depth, bf16* shared) {
  constexpr int kStage = kStageElements<kADepthContiguous, kBDepthContiguous>;
  constexpr int kAElements = SharedTile<kADepthContiguous>::kElements;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) accumulators.values[m][n][i] = 0.0f;
    }
  }
  int64_t steps = (depth + kDepth - 1) / kDepth;
  auto load_stage = [&](int64_t step) {
    bf16* stage = shared + (step % kStages) * kStage;
    load_tile<kADepthContiguous>(stage, a, step * kDepth);
    load_tile<kBDepthContiguous>(stage + kAElements, b, step * kDepth);
  };
  for (int64_t step = 0; step < kStages - 1; ++step) {
    if (step < steps) load_stage(step);
    sm80::commit_async_copies();
  }
  int row = warp_row(), column = warp_column();
  for (int64_t step = 0; step < steps; ++step) {
    sm80::wait_async_copies<kStages - 2>();
    __syncthreads();  // stage `step` is visible to all; every warp is done reading the stage reloaded below
    if (step + kStages - 1 < steps) load_stage(step + kStages - 1);
    sm80::commit_async_copies();
    const bf16* stage = shared + (step % kStages) * kStage;
    Fragments fragments[2];
    load_fragments<kADepthContiguous, kBDepthContiguous>(fragments[0], stage, kAElements, row, column, 0);
#pragma unroll
    for (int slice = 0; slice < kDepth / 16; ++slice) {
      if (slice + 1 < kDepth / 16) {
        load_fragments<kADepthContiguous, kBDepthContiguous>(fragments[(slice + 1) % 2], stage, kAElements, row,
                                                             column, (slice + 1) * 16);
      }
      const Fragments& current = fragments[slice % 2];
#pragma unroll
      for (int m = 0; m < 4; ++m) {
#pragma unroll
        for (int n = 0; n < 8; ++n) {
          sm80::mma_bf16_16x8x16(accumulators.values[m][n], current.a[m], current.b[n][0], current.b[n][1]);
        }
      }
    }
  }
  sm80::wait_async_copies<0>();
}

// Calls store(row, column, value0, value1) for every pair of adjacent accumulators of this thread: (row, column)
// and (row, column + 1) of the block tile.
template <typename Store>
__device__ inline void for_each_accumulator_pair(const Accumulators& accumulators, Store store) {
  int lane = static_cast<int>(threadIdx.x) % 32;
  int row = warp_row() + lane / 4;
  int column = warp_column() + (lane % 4) * 2;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      const float* c = accumulators.values[m][n];
      store(row + m * 16, column + n * 8, c[0], c[1]);
      store(row + m * 16 + 8, column + n * 8, c[2], c[3]);
    }
  }
}

}  // namespace hai::cuda::kernels::mma
