#pragma once
// The warp-specialised sm_90a main loop of the grouped GEMMs (rows grouped by expert): 128-row fp32 block tiles
// reduced stage by stage. A persistent grid (one block per multiprocessor) walks the tiles of a Problem (below).
// Per block:
//   - one producer thread (in a warpgroup of its own, registers lowered to 40) copies each stage of the operands
//     with the bulk tensor copy engine (tma_sm90.cuh) into a ring of stages: a stage is full when its copies' bytes
//     have landed (full barrier), free again when every consumer warp has finished reading it (empty barrier, one
//     arrival per warp);
//   - two consumer warpgroups (registers raised to 232) each multiply 64 rows of the tile by its columns with
//     wgmma.mma_async straight from the ring, then hand their accumulators to the problem's write-out while the
//     producer fills the ring with the next tile's stages. copy_out (below) is the usual write-out: 64 x 128-byte
//     chunks that the copy engine writes or adds to global memory while the warpgroup goes on.
// How a stage is multiplied is the problem's Math:
//   Bf16Math: 64-deep bf16 stages, 128 x 256 tiles, m64n256k16 into the accumulators; 4 stages of 48 KB.
//   Fp8Math (grouped_gemm_tma_fp8.cuh): 128-deep e4m3 stages (one scale block), 128 x 128 tiles, m64n128k32 into a
//     stage sum that is waited for and scaled into the fp32 totals (DeepSeek-V3's promotion); 6 stages of 32 KB.
//   Fp8WeightGradMath (grouped_gemm_tma_fp8_weight_grad.cuh): Fp8Math's stages, each stage sum scaled by a scale of
//     its row times a scale of its column.
// A stage is freed once the next stage's products are issued and its own are complete; Math::stage_done(step) runs
// just before.
// Shared memory per stage, 128-byte swizzled as wgmma_sm90.cuh describes (the copy engine writes that swizzle): A,
// the tile's 128 rows x one 128-byte row each (16 KB), then B, its columns x 128 bytes, each K-major or MN-major as
// the problem says. After the stages: two 8 KB output chunk buffers per consumer, then the barriers
// (shared_bytes<Math>()).
//
// A Problem (grouped_gemm_tma_rows.cuh: bf16 forward and input gradient; grouped_gemm_tma_weight_grad.cuh: bf16
// weight gradient; grouped_gemm_tma_fp8.cuh: e4m3 forward and input gradient; grouped_gemm_tma_fp8_weight_grad.cuh:
// e4m3 weight gradient) provides:
//   Math; Tile, and Walk, made by walk() and with bool next(Tile*): the block's tiles in order (the producer and each
//     consumer walk the same sequence);
//   kTransposeA, kTransposeB: 1 where that operand is MN-major in shared memory (bf16 only);
//   prefetch(): fetches its tensor maps; depth_steps(tile): the tile's stages (0 allowed);
//   load_stage(tile, step, a, b, full): the producer's copies of one stage, Math::kStageBytes completing on `full`;
//   prepare_stage(tile, step, a, b, consumer): what the consumers change in a landed stage before its products
//     (both consumers call it for every stage, in the same order);
//   a_descriptor(a, consumer, slice), b_descriptor(b, slice): the wgmma descriptors of a slice (bf16 only);
//   write_out(tile, accumulators, consumer, output_buffers): the consumer's results;
//   with the e4m3 Maths, tile_scales(tile, consumer): where the tile's promotion scales of the thread's
//     accumulators are (the Math's TileScales).
// All of it exists only where nvcc compiles for sm_90a (HAI_WGMMA_AVAILABLE); the kernels trap elsewhere.

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/mma_sm80.cuh"
#include "framework/device/cuda/tma_sm90.cuh"
#include "framework/device/cuda/wgmma_sm90.cuh"

namespace hai::cuda::kernels::tma {

using bf16 = __nv_bfloat16;

inline constexpr int kBlockRows = 128;
inline constexpr int kConsumers = 2;               // consumer warpgroups, 64 rows each
inline constexpr int kConsumerRows = kBlockRows / kConsumers;
inline constexpr int kThreads = (kConsumers + 1) * 128;
inline constexpr int kProducerRegisters = 40;
inline constexpr int kConsumerRegisters = 232;     // 2 x 128 x 232 + 128 x 40 <= 65536
inline constexpr int kRowBytes = 128;              // a stage row of an operand: one 128-byte swizzled row
inline constexpr int kABytes = kBlockRows * kRowBytes;
inline constexpr int kAtomColumns = 64;            // a bf16 MN-major atom: 64 outputs (128 bytes) x 64 depth rows
inline constexpr int kAtomBytes = 64 * kRowBytes;
inline constexpr int kOutputChunkBytes = kConsumerRows * 128;  // 64 rows of 128 bytes: 32 fp32 or 64 bf16
inline constexpr int kOutputBuffers = 2;                        // chunk buffers per consumer, used in turn
inline constexpr int kOutputBytes = kConsumers * kOutputBuffers * kOutputChunkBytes;
// Named barriers (0 is __syncthreads'): 1 + consumer for each consumer warpgroup, and one for both consumers.
inline constexpr int kConsumersBarrier = 1 + kConsumers;

static_assert(kConsumerRegisters * kConsumers * 128 + kProducerRegisters * 128 <= 65536);

#if defined(HAI_WGMMA_AVAILABLE)

// The descriptor of a 16-deep bf16 (32-deep e4m3) slice `slice` (0..3) of a stage operand that starts at `operand`:
// K-major, from its row `row`; or MN-major (bf16), from its atom `atom` (64 outputs each).
__device__ inline uint64_t k_major_descriptor(const unsigned char* operand, int row, int slice) {
  return sm90::matrix_descriptor(sm80::shared_address(operand) + row * kRowBytes + slice * 32, 0, 1024);
}
__device__ inline uint64_t mn_major_descriptor(const unsigned char* operand, int atom, int slice) {
  return sm90::matrix_descriptor(sm80::shared_address(operand) + atom * kAtomBytes + slice * 16 * kRowBytes,
                                 kAtomBytes, 1024);
}

#endif  // HAI_WGMMA_AVAILABLE

// bf16 stages: 64 deep, 128 x 256 tiles, m64n256k16, one stage's products in flight while the next are issued.
struct Bf16Math {
  static constexpr int kDepth = 64;
  static constexpr int kBlockColumns = 256;
  static constexpr int kStages = 4;
  static constexpr int kStageBytes = kABytes + kBlockColumns * kRowBytes;
  using Accumulators = float[128];  // this thread's part of 64 x 256 in the m64nN layout (wgmma_sm90.cuh)

#if defined(HAI_WGMMA_AVAILABLE)
  // Before a tile's first stage.
  template <typename Problem>
  __device__ static void start_tile(Accumulators& accumulators, const Problem&, const typename Problem::Tile&, int) {
#pragma unroll
    for (int i = 0; i < 128; ++i) accumulators[i] = 0.0f;
  }
  // Issues the stage's products (committed, not waited for).
  template <typename Problem>
  __device__ static void multiply_stage(Accumulators& accumulators, const Problem& problem,
                                        const typename Problem::Tile&, int64_t, const unsigned char* a,
                                        const unsigned char* b, int consumer) {
    sm90::warpgroup_fence();
#pragma unroll
    for (int slice = 0; slice < kDepth / 16; ++slice) {
      sm90::mma_m64n256k16_bf16<Problem::kTransposeA, Problem::kTransposeB>(
          accumulators, problem.a_descriptor(a, consumer, slice), problem.b_descriptor(b, slice));
    }
    sm90::warpgroup_commit();
  }
  // After stage `step`'s products completed (nothing to do: they went into the accumulators).
  __device__ static void stage_done(Accumulators&, int64_t) {}
  // After the tile's last products completed.
  __device__ static void finish(Accumulators& accumulators) {
#pragma unroll
    for (int i = 0; i < 128; ++i) sm90::fence_register(accumulators[i]);
  }
#endif  // HAI_WGMMA_AVAILABLE
};

// Shared memory of a block whose problem multiplies with Math: the stages, the output buffers, the barriers, and
// room to align the stages to 1024 bytes.
template <typename Math>
constexpr int shared_bytes() {
  return Math::kStages * Math::kStageBytes + kOutputBytes + 2 * Math::kStages * 8 + 1024;
}

// Launches a kernel of the loop whose problems multiply with Math as a persistent grid: one block per
// multiprocessor, at most one per tile, shared_bytes<Math>() of shared memory each. Host code.
template <typename Math, typename... Parameters, typename... Arguments>
cudaError_t launch_persistent(void (*kernel)(Parameters...), int64_t tiles, cudaStream_t stream,
                              const Arguments&... arguments) {
  constexpr int kSharedBytes = shared_bytes<Math>();
  int device = 0, multiprocessors = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return status;
  status = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
  if (status != cudaSuccess) return status;
  status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes);
  if (status != cudaSuccess) return status;
  auto grid = static_cast<unsigned int>(tiles < multiprocessors ? tiles : multiprocessors);
  kernel<<<grid, kThreads, kSharedBytes, stream>>>(arguments...);
  return cudaGetLastError();
}

#if defined(HAI_WGMMA_AVAILABLE)

// Fills the ring with every stage of every tile of the block.
template <typename Problem>
__device__ inline void produce(const Problem& problem, unsigned char* stages, uint64_t* full, uint64_t* empty) {
  using Math = typename Problem::Math;
  problem.prefetch();
  int stage = 0;
  uint32_t phase = 0;
  auto walk = problem.walk();
  typename Problem::Tile tile;
  while (walk.next(&tile)) {
    int64_t steps = problem.depth_steps(tile);
    for (int64_t step = 0; step < steps; ++step) {
      sm90::barrier_wait(&empty[stage], phase ^ 1);
      unsigned char* a = stages + stage * Math::kStageBytes;
      problem.load_stage(tile, step, a, a + kABytes, &full[stage]);
      if (++stage == Math::kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

__device__ inline void store_pair(unsigned char* destination, float value0, float value1, float) {
  *reinterpret_cast<float2*>(destination) = float2{value0, value1};
}
__device__ inline void store_pair(unsigned char* destination, float value0, float value1, bf16) {
  *reinterpret_cast<__nv_bfloat162*>(destination) = __floats2bfloat162_rn(value0, value1);
}

// Where copy_out writes: rows [row, row + 64) and columns from `column` of a 2-d map's tensor, or of matrix `matrix`
// of a 3-d map's [matrices, rows, columns] (matrix -1: the map is 2-d). The map's boxes are (128 bytes, 64 rows) or
// (128 bytes, 64 rows, 1).
struct OutputBox {
  const CUtensorMap& map;
  int32_t row;
  int32_t column;
  int32_t matrix = -1;
};

// Writes the calling consumer warpgroup's accumulators (64 x 2 kAccumulators in the m64nN layout) to `box` as
// Element (float, or bf16 rounded to nearest even): chunk by chunk of 128-byte rows, staged in `buffers`
// (kOutputBuffers of kOutputChunkBytes, used in turn; a tile's chunks are a multiple of them) and written by the
// copy engine. add: add them to the fp32 tensor instead. barrier: the warpgroup's named barrier.
template <typename Element, int kAccumulators>
__device__ inline void copy_out(const float (&accumulators)[kAccumulators], const OutputBox& box, bool add,
                                unsigned char* buffers, int barrier) {
  constexpr int kColumns = 2 * kAccumulators;
  constexpr int kChunkColumns = 128 / static_cast<int>(sizeof(Element));
  constexpr int kGroups = kChunkColumns / 8;  // n8 column groups of the accumulator layout per chunk
  static_assert(kColumns / kChunkColumns % kOutputBuffers == 0);
  int thread = static_cast<int>(threadIdx.x) % 128;
  int lane = thread % 32;
  int chunk_row = thread / 32 * 16 + lane / 4;
  int group_column = (lane % 4) * 2;
#pragma unroll
  for (int chunk = 0; chunk < kColumns / kChunkColumns; ++chunk) {
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
      int32_t column = box.column + chunk * kChunkColumns;
      if (box.matrix < 0) {
        if (add) {
          sm90::add_box_to_global_2d(&box.map, column, box.row, buffer);
        } else {
          sm90::copy_box_to_global_2d(&box.map, column, box.row, buffer);
        }
      } else if (add) {
        sm90::add_box_to_global_3d(&box.map, column, box.row, box.matrix, buffer);
      } else {
        sm90::copy_box_to_global_3d(&box.map, column, box.row, box.matrix, buffer);
      }
      sm90::commit_bulk_group();
    }
  }
}

// Calls store(row, column, value0, value1) for every pair of adjacent accumulators of the calling consumer (64 x
// 2 kAccumulators in the m64nN layout): (row, column) and (row, column + 1) of the block tile.
template <int kAccumulators, typename Store>
__device__ inline void for_each_pair(const float (&accumulators)[kAccumulators], int consumer, Store store) {
  int lane = static_cast<int>(threadIdx.x) % 32;
  int warp = static_cast<int>(threadIdx.x) / 32 % 4;
  int row = consumer * kConsumerRows + warp * 16 + lane / 4;
  int column = (lane % 4) * 2;
#pragma unroll
  for (int j = 0; j < kAccumulators / 4; ++j) {
    const float* c = accumulators + 4 * j;
    store(row, column + j * 8, c[0], c[1]);
    store(row + 8, column + j * 8, c[2], c[3]);
  }
}

// Consumer warpgroup `consumer` of the block: rows [64 consumer, 64 consumer + 64) of every tile the producer
// loads.
template <typename Problem>
__device__ inline void consume(const Problem& problem, unsigned char* stages, uint64_t* full, uint64_t* empty,
                               unsigned char* output_buffers, int consumer) {
  using Math = typename Problem::Math;
  int lane = static_cast<int>(threadIdx.x) % 32;
  typename Math::Accumulators accumulators;
  int stage = 0;
  uint32_t phase = 0;
  auto walk = problem.walk();
  typename Problem::Tile tile;
  while (walk.next(&tile)) {
    Math::start_tile(accumulators, problem, tile, consumer);
    auto steps = static_cast<int>(problem.depth_steps(tile));
    int previous = 0;
    for (int step = 0; step < steps; ++step) {
      sm90::barrier_wait(&full[stage], phase);
      unsigned char* a = stages + stage * Math::kStageBytes;
      problem.prepare_stage(tile, step, a, a + kABytes, consumer);
      Math::multiply_stage(accumulators, problem, tile, step, a, a + kABytes, consumer);
      sm90::warpgroup_wait<1>();  // the previous stage's products are done: its stage may be refilled
      if (step > 0) {
        Math::stage_done(accumulators, step - 1);
        if (lane == 0) sm90::barrier_arrive(&empty[previous]);
      }
      previous = stage;
      if (++stage == Math::kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
    sm90::warpgroup_wait<0>();
    if (steps > 0) {
      Math::stage_done(accumulators, steps - 1);
      if (lane == 0) sm90::barrier_arrive(&empty[previous]);
    }
    Math::finish(accumulators);
    problem.write_out(tile, accumulators, consumer, output_buffers);
  }
  if (threadIdx.x % 128 == 0) sm90::wait_bulk_groups();  // NOTE: the copies read shared memory until they complete
}

// The block's share of the problem's tiles; shared: shared_bytes<Problem::Math>(); kThreads threads, launched with
// at most one block per multiprocessor's worth of registers (__launch_bounds__(kThreads, 1)).
template <typename Problem>
__device__ inline void multiply_tiles(const Problem& problem, unsigned char* shared) {
  using Math = typename Problem::Math;
  uint32_t misalignment = sm80::shared_address(shared) % 1024;
  unsigned char* stages = shared + (misalignment == 0 ? 0 : 1024 - misalignment);
  unsigned char* output_buffers = stages + Math::kStages * Math::kStageBytes;
  auto* full = reinterpret_cast<uint64_t*>(output_buffers + kOutputBytes);
  uint64_t* empty = full + Math::kStages;
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < Math::kStages; ++stage) {
      sm90::barrier_init(&full[stage], 1);
      sm90::barrier_init(&empty[stage], kConsumers * 4);
    }
    sm90::fence_barrier_init();
  }
  __syncthreads();
  int warpgroup = static_cast<int>(threadIdx.x) / 128;
  if (warpgroup == kConsumers) {
    sm90::lower_registers<kProducerRegisters>();
    if (threadIdx.x == kConsumers * 128) produce(problem, stages, full, empty);
  } else {
    sm90::raise_registers<kConsumerRegisters>();
    consume(problem, stages, full, empty, output_buffers + warpgroup * kOutputBuffers * kOutputChunkBytes,
            warpgroup);
  }
}

#endif  // HAI_WGMMA_AVAILABLE

}  // namespace hai::cuda::kernels::tma
