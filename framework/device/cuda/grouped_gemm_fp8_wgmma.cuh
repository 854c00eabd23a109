#pragma once
// The sm_90a main loop of the FP8 grouped GEMM: a 128 x 128 fp32 block tile of dequant(A) @ dequant(B)^T, both
// operands e4m3 and K-major, computed by two warpgroups (warpgroup g owns rows [64g, 64g + 64)) with wgmma
// m64n128k32 straight from shared memory. A 4-stage cp.async pipeline stages 128-deep slices of both operands into
// the 128-byte-swizzled K-major layout of wgmma_sm90.cuh (one 128-byte row per operand row: the bf16 loop's layout,
// grouped_gemm_wgmma.cuh, with 128 e4m3 elements where it holds 64 bf16).
//
// Promotion (DeepSeek-V3's): a stage is one 128-deep scale block. Its four k32 products go to a temporary
// accumulator (the first one overwrites it), which is then scaled and added to the fp32 accumulator:
//   acc = fma(stage_sum, x_scale(row, block) * w_scale(column block, block), acc)
// so the tensor core's limited-precision accumulation never runs over more than 128 products. The CPU reference
// (fp8_gemm.h) sums dequantised products one by one instead: the two agree within about 2^-10 of sum |terms|
// (tests/framework/device/cuda/grouped_gemm_fp8_test.cc says why), not bit for bit.
//
// 128 KB of shared memory and 128 accumulator registers per thread: one block per multiprocessor.

#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/grouped_gemm_wgmma.cuh"
#include "framework/device/cuda/mma_sm80.cuh"
#include "framework/device/cuda/wgmma_sm90.cuh"

namespace hai::cuda::kernels::fp8_wgmma {

inline constexpr int kTile = 128;        // outer extent of a block tile (both operands)
inline constexpr int kDepth = 128;       // e4m3 elements per stage: one scale block, one 128-byte row
inline constexpr int kSliceDepth = 32;   // per wgmma
inline constexpr int kChunk = 16;        // e4m3 elements per cp.async
inline constexpr int kStages = 4;
inline constexpr int kThreads = 256;     // two warpgroups
inline constexpr int kWarpgroupRows = 64;
inline constexpr int kRowBytes = kDepth;
inline constexpr int kOperandBytes = kTile * kRowBytes;
inline constexpr int kStageBytes = 2 * kOperandBytes;
inline constexpr int kSharedBytes = kStages * kStageBytes + 1024;  // + room to align the tiles to 1024 bytes

// This thread's 64 x 128 share of its warpgroup's accumulators, in the m64n128 layout (wgmma_sm90.cuh): the bf16
// loop's, so its for_each_accumulator_pair walks them.
using Accumulators = wgmma::Accumulators;

// One K-major e4m3 operand of a block: element (outer o, depth d) is origin[o * stride + d]; elements with
// o >= outer_limit or d >= depth_limit read as 0 (depth_limit a multiple of kChunk).
struct OperandSource {
  const uint8_t* origin;
  int64_t stride;
  int64_t outer_limit;
  int64_t depth_limit;
};

// The scales that promote this thread's accumulators: one per 128-deep block along K for each of its two rows
// (rows r and r + 8 of the m64n128 layout) and for the block tile's 128 columns.
struct StageScales {
  const float* top_row;     // [ceil(K / 128)] x's 1x128 scales of the thread's upper row; nullptr past the rows
  const float* bottom_row;  // the same for the row 8 below
  const float* columns;     // [ceil(K / 128)] W's 128x128 scales of the tile's column block
};

// Row of the block tile that accumulator pair j's upper value belongs to (the lower one is 8 rows further).
__device__ inline int thread_top_row() {
  int thread = static_cast<int>(threadIdx.x);
  return thread / 128 * kWarpgroupRows + (thread / 32 % 4) * 16 + thread % 32 / 4;
}

// Queues the copies of depth [depth_begin, depth_begin + kDepth) of an operand's tile into `tile` (1024-byte
// aligned, shared): 1024 chunks of 16 elements, 4 per thread.
__device__ inline void load_tile(unsigned char* tile, const OperandSource& source, int64_t depth_begin) {
  constexpr int kChunksPerRow = kDepth / kChunk;
#pragma unroll
  for (int i = 0; i < kTile * kChunksPerRow / kThreads; ++i) {
    int chunk = static_cast<int>(threadIdx.x) + i * kThreads;
    int outer = chunk / kChunksPerRow;
    int part = chunk % kChunksPerRow;
    int64_t depth = depth_begin + part * kChunk;
    auto offset = static_cast<uint32_t>(outer * kRowBytes + part * kChunk);  // before swizzling
    bool valid = outer < source.outer_limit && depth < source.depth_limit;
    const uint8_t* element = source.origin + outer * source.stride + depth;
    sm80::copy_16_bytes_async(tile + sm90::swizzled_offset(offset), valid ? element : source.origin, valid);
  }
}

// The descriptor of a K-major operand tile's first 32-deep slice from outer row `outer` (0 or 64).
__device__ inline uint64_t operand_descriptor(const unsigned char* tile, int outer) {
  return sm90::matrix_descriptor(sm80::shared_address(tile) + outer * kRowBytes, 0, 1024);
}

#if defined(HAI_WGMMA_AVAILABLE)

// accumulators += stage sums * their rows' scales (upper values: top_scale, lower: bottom_scale).
__device__ inline void promote(Accumulators& accumulators, const Accumulators& stage_sums, float top_scale,
                               float bottom_scale) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    float* acc = accumulators.values + 4 * j;
    const float* sums = stage_sums.values + 4 * j;
    acc[0] = fmaf(sums[0], top_scale, acc[0]);
    acc[1] = fmaf(sums[1], top_scale, acc[1]);
    acc[2] = fmaf(sums[2], bottom_scale, acc[2]);
    acc[3] = fmaf(sums[3], bottom_scale, acc[3]);
  }
}

// stage_sums <- this warpgroup's 64 rows of the stage's A tile @ the B tile^T over its 128 depth.
// NOTE: a slice's descriptor is the stage's plus the slice's 32 bytes in the start-address field (bits 0-13,
// address / 16): one descriptor per operand and stage, not one per product.
__device__ inline void multiply_stage(Accumulators& stage_sums, const unsigned char* stage, int warpgroup_outer) {
  uint64_t a = operand_descriptor(stage, warpgroup_outer);
  uint64_t b = operand_descriptor(stage + kOperandBytes, 0);
  constexpr uint64_t kSliceStep = kSliceDepth / 16;
  sm90::warpgroup_fence();
#pragma unroll
  for (int slice = 0; slice < kDepth / kSliceDepth; ++slice) {
    sm90::mma_m64n128k32_e4m3(stage_sums.values, a + slice * kSliceStep, b + slice * kSliceStep, slice != 0);
  }
  sm90::warpgroup_commit();
  sm90::warpgroup_wait<0>();
#pragma unroll
  for (int i = 0; i < 64; ++i) sm90::fence_register(stage_sums.values[i]);
}

#endif  // HAI_WGMMA_AVAILABLE

// accumulators (zeroed here) <- dequant(A tile) @ dequant(B tile)^T over depth [0, depth), promoted stage by
// stage. shared: kSharedBytes of the block.
__device__ inline void multiply_tiles(Accumulators& accumulators, const OperandSource& a, const OperandSource& b,
                                      const StageScales& scales, int64_t depth, unsigned char* shared) {
#if defined(HAI_WGMMA_AVAILABLE)
  uint32_t misalignment = sm80::shared_address(shared) % 1024;
  unsigned char* stages = shared + (misalignment == 0 ? 0 : 1024 - misalignment);
#pragma unroll
  for (int i = 0; i < 64; ++i) accumulators.values[i] = 0.0f;
  int64_t steps = (depth + kDepth - 1) / kDepth;
  auto load_stage = [&](int64_t step) {
    unsigned char* stage = stages + (step % kStages) * kStageBytes;
    load_tile(stage, a, step * kDepth);
    load_tile(stage + kOperandBytes, b, step * kDepth);
  };
  for (int64_t step = 0; step < kStages - 1; ++step) {
    if (step < steps) load_stage(step);
    sm80::commit_async_copies();
  }
  int warpgroup_outer = static_cast<int>(threadIdx.x) / 128 * kWarpgroupRows;
  Accumulators stage_sums;
  for (int64_t step = 0; step < steps; ++step) {
    // The scales first: their loads overlap the wait and the products.
    float column_scale = scales.columns[step];
    float top_scale = scales.top_row != nullptr ? scales.top_row[step] * column_scale : 0.0f;
    float bottom_scale = scales.bottom_row != nullptr ? scales.bottom_row[step] * column_scale : 0.0f;
    sm80::wait_async_copies<kStages - 2>();
    sm90::fence_shared_for_async_proxy();
    __syncthreads();  // stage `step` is visible to both warpgroups; the stage reloaded below is no longer read
    if (step + kStages - 1 < steps) load_stage(step + kStages - 1);
    sm80::commit_async_copies();
    multiply_stage(stage_sums, stages + (step % kStages) * kStageBytes, warpgroup_outer);
    promote(accumulators, stage_sums, top_scale, bottom_scale);
  }
  sm80::wait_async_copies<0>();
#else
  __trap();  // NOTE: launched only where nvcc built sm_90a code (grouped_gemm_fp8_wgmma.cu)
#endif
}

}  // namespace hai::cuda::kernels::fp8_wgmma
