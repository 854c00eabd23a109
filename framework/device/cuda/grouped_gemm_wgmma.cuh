#pragma once
// The sm_90a main loop of the grouped GEMM: the same 128 x 128 fp32 block tile of op(A) @ op(B) as the mma.sync loop
// (grouped_gemm_mma.cuh: operands described by mma::OperandSource, out-of-range chunks zero-filled), computed by two
// warpgroups with wgmma.mma_async m64n128k16 straight from shared memory (no fragment loads): warpgroup g owns
// rows [64g, 64g + 64) of the tile. Operands are staged by a 3-stage cp.async pipeline into the 128-byte-swizzled
// layouts of wgmma_sm90.cuh, K-major or MN-major as they lie in global memory (wgmma transposes MN-major operands
// itself). 96 KB of shared memory per block: two blocks per multiprocessor.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/grouped_gemm_mma.cuh"
#include "framework/device/cuda/mma_sm80.cuh"
#include "framework/device/cuda/wgmma_sm90.cuh"

namespace hai::cuda::kernels::wgmma {

inline constexpr int kTile = 128;              // outer extent of a block tile (both operands)
inline constexpr int kDepth = 64;              // reduction per stage: one 128-byte row of 16-bit elements
inline constexpr int kStages = 3;
inline constexpr int kThreads = 256;           // two warpgroups
inline constexpr int kWarpgroupRows = 64;
inline constexpr int kRowBytes = kDepth * 2;   // a K-major row; also an MN-major atom's row (64 outputs)
inline constexpr int kOperandBytes = kTile * kDepth * 2;
inline constexpr int kStageBytes = 2 * kOperandBytes;
inline constexpr int kAtomBytes = kDepth * kRowBytes;  // MN-major: 64 outputs x kDepth reduction rows
inline constexpr int kSharedBytes = kStages * kStageBytes + 1024;  // + room to align the tiles to 1024 bytes

using bf16 = __nv_bfloat16;
using mma::OperandSource;

// This thread's accumulators: 64 x 128 of its warpgroup in the m64n128 layout (wgmma_sm90.cuh).
struct Accumulators {
  float values[64];
};

// Queues the copies of depth [depth_begin, depth_begin + kDepth) of an operand's tile into `tile` (1024-byte
// aligned, shared): 1024 chunks of 8 elements, 4 per thread.
template <bool kDepthContiguous>
__device__ inline void load_tile(unsigned char* tile, const OperandSource& source, int64_t depth_begin) {
#pragma unroll
  for (int i = 0; i < kTile * kDepth / 8 / kThreads; ++i) {
    int chunk = static_cast<int>(threadIdx.x) + i * kThreads;
    int64_t outer, depth;
    uint32_t offset;  // before swizzling
    if constexpr (kDepthContiguous) {
      outer = chunk / (kDepth / 8);
      depth = depth_begin + (chunk % (kDepth / 8)) * 8;
      offset = static_cast<uint32_t>(outer * kRowBytes + (chunk % (kDepth / 8)) * 16);
    } else {
      int row = chunk / (kTile / 8);  // reduction index inside the stage
      int column_chunk = chunk % (kTile / 8);
      outer = column_chunk * 8;
      depth = depth_begin + row;
      offset = static_cast<uint32_t>((column_chunk / 8) * kAtomBytes + row * kRowBytes + (column_chunk % 8) * 16);
    }
    bool valid = outer < source.outer_limit && depth < source.depth_limit;
    const bf16* element = kDepthContiguous ? source.origin + outer * source.stride + depth
                                           : source.origin + depth * source.stride + outer;
    sm80::copy_16_bytes_async(tile + sm90::swizzled_offset(offset), valid ? element : source.origin, valid);
  }
}

// The descriptor of an operand tile's 16-deep slice `slice` (0..3), from outer row `outer` (0 or 64, A only).
template <bool kDepthContiguous>
__device__ inline uint64_t slice_descriptor(const unsigned char* tile, int outer, int slice) {
  uint32_t address = sm80::shared_address(tile);
  if constexpr (kDepthContiguous) {
    return sm90::matrix_descriptor(address + outer * kRowBytes + slice * 32, 0, 1024);
  } else {
    return sm90::matrix_descriptor(address + (outer / 64) * kAtomBytes + slice * 16 * kRowBytes, kAtomBytes, 1024);
  }
}

// accumulators (zeroed here) <- op(A) tile @ op(B) tile over depth [0, depth). shared: kSharedBytes of the block.
template <bool kADepthContiguous, bool kBDepthContiguous>
__device__ inline void multiply_tiles(Accumulators& accumulators, const OperandSource& a, const OperandSource& b,
                                      int64_t depth, unsigned char* shared) {
#if defined(HAI_WGMMA_AVAILABLE)
  uint32_t misalignment = sm80::shared_address(shared) % 1024;
  unsigned char* stages = shared + (misalignment == 0 ? 0 : 1024 - misalignment);
#pragma unroll
  for (int i = 0; i < 64; ++i) accumulators.values[i] = 0.0f;
  int64_t steps = (depth + kDepth - 1) / kDepth;
  auto load_stage = [&](int64_t step) {
    unsigned char* stage = stages + (step % kStages) * kStageBytes;
    load_tile<kADepthContiguous>(stage, a, step * kDepth);
    load_tile<kBDepthContiguous>(stage + kOperandBytes, b, step * kDepth);
  };
  for (int64_t step = 0; step < kStages - 1; ++step) {
    if (step < steps) load_stage(step);
    sm80::commit_async_copies();
  }
  int warpgroup_outer = static_cast<int>(threadIdx.x) / 128 * kWarpgroupRows;
  for (int64_t step = 0; step < steps; ++step) {
    sm80::wait_async_copies<kStages - 2>();
    sm90::fence_shared_for_async_proxy();
    __syncthreads();  // stage `step` is visible to both warpgroups; the stage reloaded below is no longer read
    if (step + kStages - 1 < steps) load_stage(step + kStages - 1);
    sm80::commit_async_copies();
    const unsigned char* stage = stages + (step % kStages) * kStageBytes;
    sm90::warpgroup_fence();
#pragma unroll
    for (int slice = 0; slice < kDepth / 16; ++slice) {
      sm90::mma_m64n128k16_bf16<kADepthContiguous ? 0 : 1, kBDepthContiguous ? 0 : 1>(
          accumulators.values, slice_descriptor<kADepthContiguous>(stage, warpgroup_outer, slice),
          slice_descriptor<kBDepthContiguous>(stage + kOperandBytes, 0, slice));
    }
    sm90::warpgroup_commit();
    sm90::warpgroup_wait<0>();
  }
  sm80::wait_async_copies<0>();
#pragma unroll
  for (int i = 0; i < 64; ++i) sm90::fence_register(accumulators.values[i]);
#else
  __trap();  // NOTE: launched only where nvcc built sm_90a code (grouped_gemm_kernels.cu)
#endif
}

// Calls store(row, column, value0, value1) for every pair of adjacent accumulators of this thread: (row, column)
// and (row, column + 1) of the block tile.
template <typename Store>
__device__ inline void for_each_accumulator_pair(const Accumulators& accumulators, Store store) {
  int thread = static_cast<int>(threadIdx.x);
  int lane = thread % 32;
  int row = thread / 128 * kWarpgroupRows + (thread / 32 % 4) * 16 + lane / 4;
  int column = (lane % 4) * 2;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const float* c = accumulators.values + 4 * j;
    store(row, column + j * 8, c[0], c[1]);
    store(row + 8, column + j * 8, c[2], c[3]);
  }
}

}  // namespace hai::cuda::kernels::wgmma
