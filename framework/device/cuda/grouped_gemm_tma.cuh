#pragma once
// The warp-specialised sm_90a main loop of the grouped GEMM's forward and input gradient (rows grouped by expert):
// y [R, N] = x [R, K] @ op(W_e) over each expert's rows, in 128 x 256 fp32 block tiles. A persistent grid (one
// block per multiprocessor) walks the tiles of grouped_gemm_schedule.cuh's slots, N tiles fastest. Per block:
//   - one producer thread (in a warpgroup of its own, registers lowered to 40) copies each 64-deep stage of the
//     operands with the bulk tensor copy engine (tma_sm90.cuh) into a 4-stage ring: a stage is full when its
//     copies' bytes have landed (full barrier), free again when every consumer warp has finished reading it
//     (empty barrier, one arrival per warp);
//   - two consumer warpgroups (registers raised to 232) each multiply 64 rows of the tile by the 256 columns with
//     wgmma.mma_async m64n256k16 straight from the ring, one stage's products left in flight while the next stage's
//     are issued, then write out their accumulators while the producer fills the ring with the next tile's stages.
// Writing out: a warpgroup whose 64 rows all belong to the tile's expert stages its results in 64 x 128-byte
// chunks (fp32 or bf16) that the copy engine writes to y (or adds to fp32 y: beta 1) while the warpgroup goes on
// to the next chunk and the next tile; the others (rows past the expert's end, or another beta) go through the
// caller's store, one pair of values at a time.
// Shared memory per stage, 128-byte swizzled as wgmma_sm90.cuh describes (the copy engine writes that swizzle):
//   A: x rows [row_begin, row_begin + 128) x depth [d, d + 64): K-major, 128 rows of 128 bytes (16 KB), one box.
//   B: W_e columns [column_begin, column_begin + 256) x depth [d, d + 64), 32 KB:
//     K-major (W_e [N, K], the forward): 256 rows of 128 bytes, one box;
//     MN-major (W_e [K, N], the input gradient): 4 atoms of 64 columns x 64 depth rows (8 KB), one box each.
// After the 4 stages: two 8 KB output chunk buffers per consumer, then the barriers (kSharedBytes: 230,464 bytes).
// x's tensor map spans all R rows: a tile that ends past its expert reads the next expert's rows (the epilogue
// drops those results) and rows past R read as 0. W's spans [E, rows, columns], so a tile never reads another
// expert's weights.

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/grouped_gemm_schedule.cuh"
#include "framework/device/cuda/mma_sm80.cuh"
#include "framework/device/cuda/tma_sm90.cuh"
#include "framework/device/cuda/wgmma_sm90.cuh"

namespace hai::cuda::kernels::tma {

using bf16 = __nv_bfloat16;

inline constexpr int kBlockRows = 128;
inline constexpr int kBlockColumns = 256;
inline constexpr int kDepth = 64;                  // reduction per stage: one 128-byte swizzled row of bf16
inline constexpr int kStages = 4;
inline constexpr int kConsumers = 2;               // consumer warpgroups, 64 rows each
inline constexpr int kConsumerRows = kBlockRows / kConsumers;
inline constexpr int kThreads = (kConsumers + 1) * 128;
inline constexpr int kProducerRegisters = 40;
inline constexpr int kConsumerRegisters = 232;     // 2 x 128 x 232 + 128 x 40 <= 65536
inline constexpr int kRowBytes = kDepth * 2;
inline constexpr int kABytes = kBlockRows * kRowBytes;
inline constexpr int kBBytes = kBlockColumns * kRowBytes;
inline constexpr int kStageBytes = kABytes + kBBytes;
inline constexpr int kAtomColumns = 64;            // MN-major B: 64 columns (128 bytes) x kDepth rows
inline constexpr int kAtomBytes = kDepth * kRowBytes;
inline constexpr int kOutputChunkBytes = kConsumerRows * 128;  // 64 rows of 128 bytes: 32 fp32 or 64 bf16
inline constexpr int kOutputBuffers = 2;                        // chunk buffers per consumer, used in turn
inline constexpr int kOutputBytes = kConsumers * kOutputBuffers * kOutputChunkBytes;
inline constexpr int kSharedBytes =
    kStages * kStageBytes + kOutputBytes + 2 * kStages * 8 + 1024;  // + barriers, alignment room

static_assert(kConsumerRegisters * kConsumers * 128 + kProducerRegisters * 128 <= 65536);

// What the copy engine does with a warpgroup's results when all its rows belong to the tile's expert: nothing
// (the caller's store writes them), write them to y, or add them to fp32 y.
enum class CopyOut { none, store, add };

// What the block walks: the row-tile slots of find_expert_row_tile (kBlockRows rows) times the N tiles.
struct Schedule {
  const int32_t* offsets;  // [E + 1]
  int64_t experts;         // E
  int64_t column_tiles;    // N / kBlockColumns
  int64_t depth_steps;     // K / kDepth
  CopyOut copy_out;        // how whole 64-row halves of a tile go out
  bool bf16_output;        // y is bf16 (else fp32)
};

struct Tile {
  ExpertRowTile rows;
  int64_t column_begin;
};

// Walks tiles blockIdx.x, blockIdx.x + gridDim.x, ...: tile t is column tile t % column_tiles of row-tile slot
// t / column_tiles, so the blocks running together share x rows and one expert's weights in L2. Idle slots are the
// last ones, so the walk ends at the first.
struct TileWalk {
  const Schedule& schedule;
  int64_t index = blockIdx.x;
  ExpertRowTileCursor cursor;

  __device__ bool next(Tile* tile) {
    int64_t slot = index / schedule.column_tiles;
    if (!cursor.find(schedule.offsets, schedule.experts, slot, kBlockRows, &tile->rows)) return false;
    tile->column_begin = index % schedule.column_tiles * kBlockColumns;
    index += gridDim.x;
    return true;
  }
};

#if defined(HAI_WGMMA_AVAILABLE)

// Fills the ring with every stage of every tile of the block: x_map over x [R, K] in boxes of (64 depth, 128 rows);
// weight_map over W [E, N, K] in boxes of (64, 256, 1) when kWeightsKMajor, else over W [E, K, N] in boxes of
// (64 columns, 64 depth, 1).
template <bool kWeightsKMajor>
__device__ inline void produce(const CUtensorMap& x_map, const CUtensorMap& weight_map, const Schedule& schedule,
                               unsigned char* stages, uint64_t* full, uint64_t* empty) {
  sm90::prefetch_tensor_map(&x_map);
  sm90::prefetch_tensor_map(&weight_map);
  int stage = 0;
  uint32_t phase = 0;
  TileWalk walk{schedule};
  Tile tile;
  while (walk.next(&tile)) {
    auto row = static_cast<int32_t>(tile.rows.row_begin);
    auto column = static_cast<int32_t>(tile.column_begin);
    auto expert = static_cast<int32_t>(tile.rows.expert);
    for (int64_t step = 0; step < schedule.depth_steps; ++step) {
      sm90::barrier_wait(&empty[stage], phase ^ 1);
      unsigned char* a = stages + stage * kStageBytes;
      unsigned char* b = a + kABytes;
      auto depth = static_cast<int32_t>(step * kDepth);
      sm90::barrier_arrive_expect_bytes(&full[stage], kStageBytes);
      sm90::copy_box_2d(a, &x_map, depth, row, &full[stage]);
      if constexpr (kWeightsKMajor) {
        sm90::copy_box_3d(b, &weight_map, depth, column, expert, &full[stage]);
      } else {
#pragma unroll
        for (int atom = 0; atom < kBlockColumns / kAtomColumns; ++atom) {
          sm90::copy_box_3d(b + atom * kAtomBytes, &weight_map, column + atom * kAtomColumns, depth, expert,
                            &full[stage]);
        }
      }
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

// The descriptors of a stage's 16-deep slice `slice` (0..3): A from row `row` (0 or 64), B.
__device__ inline uint64_t a_descriptor(const unsigned char* a, int row, int slice) {
  return sm90::matrix_descriptor(sm80::shared_address(a) + row * kRowBytes + slice * 32, 0, 1024);
}
template <bool kWeightsKMajor>
__device__ inline uint64_t b_descriptor(const unsigned char* b, int slice) {
  if constexpr (kWeightsKMajor) return sm90::matrix_descriptor(sm80::shared_address(b) + slice * 32, 0, 1024);
  return sm90::matrix_descriptor(sm80::shared_address(b) + slice * 16 * kRowBytes, kAtomBytes, 1024);
}

__device__ inline void store_pair(unsigned char* destination, float value0, float value1, float) {
  *reinterpret_cast<float2*>(destination) = float2{value0, value1};
}
__device__ inline void store_pair(unsigned char* destination, float value0, float value1, bf16) {
  *reinterpret_cast<__nv_bfloat162*>(destination) = __floats2bfloat162_rn(value0, value1);
}

// Writes the calling consumer warpgroup's accumulators (64 x 256) to y [R, N] rows [row, row + 64), columns
// [column, column + 256) as Element (float, or bf16 rounded to nearest even): chunk by chunk of 128-byte rows,
// staged in `buffers` (kOutputBuffers of kOutputChunkBytes, used in turn; a tile's chunks are a multiple of them)
// and written by the copy engine.
// y_map: y in boxes of (128 bytes, 64 rows). add: add them to y (fp32) instead. barrier: the warpgroup's named
// barrier.
template <typename Element>
__device__ inline void copy_out(const float (&accumulators)[128], const CUtensorMap& y_map, int32_t row,
                                int32_t column, bool add, unsigned char* buffers, int barrier) {
  constexpr int kChunkColumns = 128 / static_cast<int>(sizeof(Element));
  constexpr int kGroups = kChunkColumns / 8;  // n8 column groups of the accumulator layout per chunk
  static_assert(kBlockColumns / kChunkColumns % kOutputBuffers == 0);
  int thread = static_cast<int>(threadIdx.x) % 128;
  int lane = thread % 32;
  int chunk_row = thread / 32 * 16 + lane / 4;
  int group_column = (lane % 4) * 2;
#pragma unroll
  for (int chunk = 0; chunk < kBlockColumns / kChunkColumns; ++chunk) {
    unsigned char* buffer = buffers + chunk % kOutputBuffers * kOutputChunkBytes;
    if (thread == 0) sm90::wait_bulk_groups_read<kOutputBuffers - 1>();
    sm90::sync_named(barrier, 128);  // the copy that last read `buffer` is done with it
#pragma unroll
    for (int group = 0; group < kGroups; ++group) {
      const float* c = accumulators + 4 * (chunk * kGroups + group);
      auto offset = static_cast<uint32_t>(chunk_row * 128 + (group * 8 + group_column) * sizeof(Element));
      store_pair(buffer + sm90::swizzled_offset(offset), c[0], c[1], Element{});
      store_pair(buffer + sm90::swizzled_offset(offset + 8 * 128), c[2], c[3], Element{});
    }
    sm90::fence_shared_for_async_proxy();
    sm90::sync_named(barrier, 128);
    if (thread == 0) {
      if (add) {
        sm90::add_box_to_global_2d(&y_map, column + chunk * kChunkColumns, row, buffer);
      } else {
        sm90::copy_box_to_global_2d(&y_map, column + chunk * kChunkColumns, row, buffer);
      }
      sm90::commit_bulk_group();
    }
  }
}

// Consumer warpgroup `consumer` of the block: rows [64 consumer, 64 consumer + 64) of every tile the producer
// loads. store(tile, row, column, value0, value1) gets (row, column) and (row, column + 1) of the tile.
template <bool kWeightsKMajor, typename Store>
__device__ inline void consume(const CUtensorMap& y_map, const Schedule& schedule, const unsigned char* stages,
                               uint64_t* full, uint64_t* empty, unsigned char* output_buffers, int consumer,
                               Store store) {
  int lane = static_cast<int>(threadIdx.x) % 32;
  int warp = static_cast<int>(threadIdx.x) / 32 % 4;
  float accumulators[128];  // this thread's part of 64 x 256 in the m64nN layout (wgmma_sm90.cuh)
  int stage = 0;
  uint32_t phase = 0;
  TileWalk walk{schedule};
  Tile tile;
  while (walk.next(&tile)) {
#pragma unroll
    for (int i = 0; i < 128; ++i) accumulators[i] = 0.0f;
    int previous = 0;
    for (int64_t step = 0; step < schedule.depth_steps; ++step) {
      sm90::barrier_wait(&full[stage], phase);
      const unsigned char* a = stages + stage * kStageBytes;
      sm90::warpgroup_fence();
#pragma unroll
      for (int slice = 0; slice < kDepth / 16; ++slice) {
        sm90::mma_m64n256k16_bf16<0, kWeightsKMajor ? 0 : 1>(accumulators,
                                                              a_descriptor(a, consumer * kConsumerRows, slice),
                                                              b_descriptor<kWeightsKMajor>(a + kABytes, slice));
      }
      sm90::warpgroup_commit();
      sm90::warpgroup_wait<1>();  // the previous stage's products are done: its stage may be refilled
      if (step > 0 && lane == 0) sm90::barrier_arrive(&empty[previous]);
      previous = stage;
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
    sm90::warpgroup_wait<0>();
    if (lane == 0) sm90::barrier_arrive(&empty[previous]);
#pragma unroll
    for (int i = 0; i < 128; ++i) sm90::fence_register(accumulators[i]);
    int64_t first_row = tile.rows.row_begin + consumer * kConsumerRows;
    if (schedule.copy_out != CopyOut::none && first_row + kConsumerRows <= tile.rows.row_end) {
      auto row = static_cast<int32_t>(first_row);
      auto column = static_cast<int32_t>(tile.column_begin);
      bool add = schedule.copy_out == CopyOut::add;
      if (schedule.bf16_output) {
        copy_out<bf16>(accumulators, y_map, row, column, add, output_buffers, 1 + consumer);
      } else {
        copy_out<float>(accumulators, y_map, row, column, add, output_buffers, 1 + consumer);
      }
      continue;
    }
    int row = consumer * kConsumerRows + warp * 16 + lane / 4;
    int column = (lane % 4) * 2;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const float* c = accumulators + 4 * j;
      store(tile, row, column + j * 8, c[0], c[1]);
      store(tile, row + 8, column + j * 8, c[2], c[3]);
    }
  }
  if (threadIdx.x % 128 == 0) sm90::wait_bulk_groups();  // NOTE: the copies read shared memory until they complete
}

#endif  // HAI_WGMMA_AVAILABLE

// The block's share of the tiles; shared: kSharedBytes; kThreads threads, launched with at most one block per
// multiprocessor's worth of registers (__launch_bounds__(kThreads, 1)). y_map: y [R, N] in boxes of (128 bytes,
// 64 rows), used unless schedule.copy_out is none.
template <bool kWeightsKMajor, typename Store>
__device__ inline void multiply_tiles(const CUtensorMap& x_map, const CUtensorMap& weight_map,
                                      const CUtensorMap& y_map, const Schedule& schedule, unsigned char* shared,
                                      Store store) {
#if defined(HAI_WGMMA_AVAILABLE)
  uint32_t misalignment = sm80::shared_address(shared) % 1024;
  unsigned char* stages = shared + (misalignment == 0 ? 0 : 1024 - misalignment);
  unsigned char* output_buffers = stages + kStages * kStageBytes;
  auto* full = reinterpret_cast<uint64_t*>(output_buffers + kOutputBytes);
  uint64_t* empty = full + kStages;
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStages; ++stage) {
      sm90::barrier_init(&full[stage], 1);
      sm90::barrier_init(&empty[stage], kConsumers * 4);
    }
    sm90::fence_barrier_init();
  }
  __syncthreads();
  int warpgroup = static_cast<int>(threadIdx.x) / 128;
  if (warpgroup == kConsumers) {
    sm90::lower_registers<kProducerRegisters>();
    if (threadIdx.x == kConsumers * 128) produce<kWeightsKMajor>(x_map, weight_map, schedule, stages, full, empty);
  } else {
    sm90::raise_registers<kConsumerRegisters>();
    consume<kWeightsKMajor>(y_map, schedule, stages, full, empty,
                            output_buffers + warpgroup * kOutputBuffers * kOutputChunkBytes, warpgroup, store);
  }
#else
  __trap();  // NOTE: launched only where nvcc built sm_90a code (grouped_gemm_kernels.cu)
#endif
}

}  // namespace hai::cuda::kernels::tma
