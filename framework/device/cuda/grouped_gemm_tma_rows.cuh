#pragma once
// The forward and input gradient on the TMA loop (grouped_gemm_tma.cuh): y [R, N] = x [R, K] @ op(W_e) over each
// expert's rows. Tiles are the row-tile slots of grouped_gemm_schedule.cuh (128 rows of one expert) times the N
// tiles (256 columns), N tiles fastest, so the blocks running together share x rows and one expert's weights in L2.
// Stage operands:
//   A: x rows [row_begin, row_begin + 128) x depth [d, d + 64): K-major, 128 rows of 128 bytes, one box.
//   B: W_e columns [column_begin, column_begin + 256) x depth [d, d + 64):
//     K-major (W_e [N, K], the forward): 256 rows of 128 bytes, one box;
//     MN-major (W_e [K, N], the input gradient): 4 atoms of 64 columns x 64 depth rows, one box each.
// x's tensor map spans all R rows: a tile that ends past its expert reads the next expert's rows (the write-out
// drops those results) and rows past R read as 0. W's spans [E, rows, columns], so a tile never reads another
// expert's weights.
// Writing out: a consumer whose 64 rows all belong to the tile's expert hands its results to the copy engine
// (copy_out: stored, or added to fp32 y for beta 1); the others (rows past the expert's end, or another beta) go
// through the caller's store, one pair of values at a time.

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/grouped_gemm_schedule.cuh"
#include "framework/device/cuda/grouped_gemm_tma.cuh"

namespace hai::cuda::kernels::tma {

// What the copy engine does with a consumer's results when all its rows belong to the tile's expert: nothing
// (the caller's store writes them), write them to y, or add them to fp32 y.
enum class CopyOut { none, store, add };

// What the block walks: the row-tile slots of find_expert_row_tile (kBlockRows rows) times the N tiles.
struct Schedule {
  const int32_t* offsets;  // [E + 1]
  int64_t experts;         // E
  int64_t column_tiles;    // N / the tile's columns
  int64_t depth_steps;     // K / the stage's depth
  CopyOut copy_out;        // how whole 64-row halves of a tile go out
  bool bf16_output;        // y is bf16 (else fp32)
};

struct Tile {
  ExpertRowTile rows;
  int64_t column_begin;
};

// Walks tiles blockIdx.x, blockIdx.x + gridDim.x, ...: tile t is column tile t % column_tiles (of kColumns) of
// row-tile slot t / column_tiles. Idle slots are the last ones, so the walk ends at the first.
template <int kColumns>
struct TileWalk {
  const Schedule& schedule;
  int64_t index = blockIdx.x;
  ExpertRowTileCursor cursor;

  __device__ bool next(Tile* tile) {
    int64_t slot = index / schedule.column_tiles;
    if (!cursor.find(schedule.offsets, schedule.experts, slot, kBlockRows, &tile->rows)) return false;
    tile->column_begin = index % schedule.column_tiles * kColumns;
    index += gridDim.x;
    return true;
  }
};

#if defined(HAI_WGMMA_AVAILABLE)

// Hands a consumer's results (64 rows x 2 kAccumulators columns of `tile`) to the copy engine when its rows all
// belong to the tile's expert and schedule.copy_out says how; false when the caller must store them itself.
// y_map: y [R, N] in boxes of (128 bytes, 64 rows).
template <int kAccumulators>
__device__ inline bool copy_out_whole_rows(const Schedule& schedule, const CUtensorMap& y_map, const Tile& tile,
                                           const float (&accumulators)[kAccumulators], int consumer,
                                           unsigned char* output_buffers) {
  int64_t first_row = tile.rows.row_begin + consumer * kConsumerRows;
  if (schedule.copy_out == CopyOut::none || first_row + kConsumerRows > tile.rows.row_end) return false;
  OutputBox box{y_map, static_cast<int32_t>(first_row), static_cast<int32_t>(tile.column_begin)};
  bool add = schedule.copy_out == CopyOut::add;
  if (schedule.bf16_output) {
    copy_out<bf16>(accumulators, box, add, output_buffers, 1 + consumer);
  } else {
    copy_out<float>(accumulators, box, add, output_buffers, 1 + consumer);
  }
  return true;
}

// x_map: x [R, K] in boxes of (64 depth, 128 rows); weight_map: W [E, N, K] in boxes of (64, 256, 1) when
// kWeightsKMajor, else W [E, K, N] in boxes of (64 columns, 64 depth, 1); y_map: y [R, N] in boxes of (128 bytes,
// 64 rows), used unless schedule.copy_out is none. store(tile, row, column, value0, value1) gets (row, column) and
// (row, column + 1) of the tile.
template <bool kWeightsKMajor, typename Store>
struct RowTileProblem {
  using Math = Bf16Math;
  using Tile = tma::Tile;
  static constexpr int kTransposeA = 0;
  static constexpr int kTransposeB = kWeightsKMajor ? 0 : 1;

  const CUtensorMap& x_map;
  const CUtensorMap& weight_map;
  const CUtensorMap& y_map;
  Schedule schedule;
  Store store;

  __device__ TileWalk<Math::kBlockColumns> walk() const { return {schedule}; }
  __device__ void prefetch() const {
    sm90::prefetch_tensor_map(&x_map);
    sm90::prefetch_tensor_map(&weight_map);
  }
  __device__ int64_t depth_steps(const Tile&) const { return schedule.depth_steps; }

  __device__ void load_stage(const Tile& tile, int64_t step, unsigned char* a, unsigned char* b,
                             uint64_t* full) const {
    auto row = static_cast<int32_t>(tile.rows.row_begin);
    auto column = static_cast<int32_t>(tile.column_begin);
    auto expert = static_cast<int32_t>(tile.rows.expert);
    auto depth = static_cast<int32_t>(step * Math::kDepth);
    sm90::barrier_arrive_expect_bytes(full, Math::kStageBytes);
    sm90::copy_box_2d(a, &x_map, depth, row, full);
    if constexpr (kWeightsKMajor) {
      sm90::copy_box_3d(b, &weight_map, depth, column, expert, full);
    } else {
#pragma unroll
      for (int atom = 0; atom < Math::kBlockColumns / kAtomColumns; ++atom) {
        sm90::copy_box_3d(b + atom * kAtomBytes, &weight_map, column + atom * kAtomColumns, depth, expert, full);
      }
    }
  }
  __device__ void prepare_stage(const Tile&, int64_t, unsigned char*, unsigned char*, int) const {}

  __device__ uint64_t a_descriptor(const unsigned char* a, int consumer, int slice) const {
    return k_major_descriptor(a, consumer * kConsumerRows, slice);
  }
  __device__ uint64_t b_descriptor(const unsigned char* b, int slice) const {
    if constexpr (kWeightsKMajor) return k_major_descriptor(b, 0, slice);
    return mn_major_descriptor(b, 0, slice);
  }

  __device__ void write_out(const Tile& tile, const Math::Accumulators& accumulators, int consumer,
                            unsigned char* output_buffers) const {
    if (copy_out_whole_rows(schedule, y_map, tile, accumulators, consumer, output_buffers)) return;
    for_each_pair(accumulators, consumer,
                  [&](int row, int column, float value0, float value1) { store(tile, row, column, value0, value1); });
  }
};

#endif  // HAI_WGMMA_AVAILABLE

}  // namespace hai::cuda::kernels::tma
