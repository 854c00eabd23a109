#pragma once
// The weight gradient on the TMA loop (grouped_gemm_tma.cuh): grad W_e [N, K] (+)= d_y_e^T @ x_e, reduced over
// expert e's rows [offsets[e], offsets[e + 1]) of d_y [R, N] and x [R, K]. A tile is 128 rows of N x 256 columns of
// K of one expert's gradient; tiles go expert by expert (then N tiles, then K tiles, K fastest), so the blocks
// running together share one expert's d_y and x rows in L2. A tile's stages are 64-row steps from the expert's
// first row (not a multiple of 64: the copy engine takes any start): both operands are MN-major in shared memory,
//   A: d_y columns [n_begin, n_begin + 128) x rows [r, r + 64): 2 atoms of 64 columns x 64 rows, one box each;
//   B: x columns [k_begin, k_begin + 256) x the same rows: 4 atoms, one box each.
// The last step of an expert whose rows are not a multiple of 64 also copies rows of the next expert (or past R,
// which read as 0): the consumers zero those rows of both operands in shared memory before the products. An
// expert without rows has tiles of no steps, whose zeros are written (beta 0) or added (beta 1).
// Writing out: every consumer's 64 x 256 results through the copy engine into the gradients, a 3-d map of
// [E, N, K] fp32 with the experts' stride, stored (beta 0) or added (beta 1).

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/grouped_gemm_tma.cuh"

namespace hai::cuda::kernels::tma {

// The tiles of a weight gradient, also the FP8 one's (grouped_gemm_tma_fp8_weight_grad.cuh, whose operands are
// token-padded: its offsets are the padded ones, its rows the padded tokens).
struct WeightGradSchedule {
  const int32_t* offsets;  // [E + 1]
  int64_t experts;         // E
  int64_t row_tiles;       // N / kBlockRows
  int64_t column_tiles;    // K / the tile's columns
  bool add;                // beta 1: add to the gradients (else overwrite them)
};

struct WeightGradTile {
  int64_t expert;
  int64_t row_begin;  // the expert's first row of d_y and x
  int64_t rows;       // its rows
  int32_t n_begin;    // first gradient row (of N) of the tile
  int32_t k_begin;    // first gradient column (of K)
};

// Walks tiles blockIdx.x, blockIdx.x + gridDim.x, ... of the E * row_tiles * column_tiles, tiles of kBlockRows x
// kBlockColumns.
template <int kBlockColumns>
struct WeightGradWalk {
  const WeightGradSchedule& schedule;
  int64_t index = blockIdx.x;

  __device__ bool next(WeightGradTile* tile) {
    int64_t tiles_per_expert = schedule.row_tiles * schedule.column_tiles;
    if (index >= schedule.experts * tiles_per_expert) return false;
    int64_t expert = index / tiles_per_expert;
    int64_t within = index % tiles_per_expert;
    tile->expert = expert;
    tile->row_begin = schedule.offsets[expert];
    tile->rows = schedule.offsets[expert + 1] - tile->row_begin;
    tile->n_begin = static_cast<int32_t>(within / schedule.column_tiles * kBlockRows);
    tile->k_begin = static_cast<int32_t>(within % schedule.column_tiles * kBlockColumns);
    index += gridDim.x;
    return true;
  }
};

#if defined(HAI_WGMMA_AVAILABLE)

// d_y_map: d_y [R, N] and x_map: x [R, K] in boxes of (64 columns, 64 rows); gradient_map: the gradients
// [E, N, K] fp32 in boxes of (32 columns, 64 rows, 1).
struct WeightGradProblem {
  using Math = Bf16Math;
  using Tile = WeightGradTile;
  static constexpr int kTransposeA = 1;
  static constexpr int kTransposeB = 1;

  const CUtensorMap& d_y_map;
  const CUtensorMap& x_map;
  const CUtensorMap& gradient_map;
  WeightGradSchedule schedule;

  __device__ WeightGradWalk<Math::kBlockColumns> walk() const { return {schedule}; }
  __device__ void prefetch() const {
    sm90::prefetch_tensor_map(&d_y_map);
    sm90::prefetch_tensor_map(&x_map);
  }
  __device__ int64_t depth_steps(const Tile& tile) const { return (tile.rows + Math::kDepth - 1) / Math::kDepth; }

  __device__ void load_stage(const Tile& tile, int64_t step, unsigned char* a, unsigned char* b,
                             uint64_t* full) const {
    auto row = static_cast<int32_t>(tile.row_begin + step * Math::kDepth);
    sm90::barrier_arrive_expect_bytes(full, Math::kStageBytes);
#pragma unroll
    for (int atom = 0; atom < kBlockRows / kAtomColumns; ++atom) {
      sm90::copy_box_2d(a + atom * kAtomBytes, &d_y_map, tile.n_begin + atom * kAtomColumns, row, full);
    }
#pragma unroll
    for (int atom = 0; atom < Math::kBlockColumns / kAtomColumns; ++atom) {
      sm90::copy_box_2d(b + atom * kAtomBytes, &x_map, tile.k_begin + atom * kAtomColumns, row, full);
    }
  }

  // On an expert's last, partial step: rows [valid, 64) of every atom belong to the next expert. Consumer c zeroes
  // them in its A atom and in B atoms 2c and 2c + 1, then waits for the other consumer (it reads those B atoms too).
  __device__ void prepare_stage(const Tile& tile, int64_t step, unsigned char* a, unsigned char* b,
                                int consumer) const {
    constexpr int kDepth = Math::kDepth;
    int64_t valid = tile.rows - step * kDepth;
    if (valid >= kDepth) return;
    constexpr int kChunksPerRow = kRowBytes / 16;
    constexpr int kAtomsPerConsumer = 1 + Math::kBlockColumns / kAtomColumns / kConsumers;
    int stale_chunks = (kDepth - static_cast<int>(valid)) * kChunksPerRow;  // per atom
    for (int i = static_cast<int>(threadIdx.x) % 128; i < kAtomsPerConsumer * stale_chunks; i += 128) {
      int atom = i / stale_chunks;
      int chunk = i % stale_chunks;
      unsigned char* origin = atom == 0 ? a + consumer * kAtomBytes
                                        : b + (consumer * (kAtomsPerConsumer - 1) + atom - 1) * kAtomBytes;
      // A whole 128-byte row is zeroed, so the swizzle inside it does not matter.
      *reinterpret_cast<uint4*>(origin + static_cast<int>(valid) * kRowBytes + chunk * 16) = uint4{0, 0, 0, 0};
    }
    sm90::fence_shared_for_async_proxy();
    sm90::sync_named(kConsumersBarrier, kConsumers * 128);
  }

  __device__ uint64_t a_descriptor(const unsigned char* a, int consumer, int slice) const {
    return mn_major_descriptor(a, consumer, slice);
  }
  __device__ uint64_t b_descriptor(const unsigned char* b, int slice) const { return mn_major_descriptor(b, 0, slice); }

  __device__ void write_out(const Tile& tile, const Math::Accumulators& accumulators, int consumer,
                            unsigned char* output_buffers) const {
    OutputBox box{gradient_map, tile.n_begin + consumer * kConsumerRows, tile.k_begin,
                  static_cast<int32_t>(tile.expert)};
    copy_out<float>(accumulators, box, schedule.add, output_buffers, 1 + consumer);
  }
};

#endif  // HAI_WGMMA_AVAILABLE

}  // namespace hai::cuda::kernels::tma
