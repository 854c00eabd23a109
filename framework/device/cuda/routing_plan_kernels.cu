#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/routing_plan_kernels.h"

namespace hai::cuda::kernels {
namespace {

constexpr unsigned int kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;
constexpr int kPlanThreads = 1024;
constexpr int kItemsPerThread = 4;  // consecutive assignments per thread, so a tile keeps (t, k) order
constexpr int kTile = kPlanThreads * kItemsPerThread;

__device__ int warp_sum_int(int value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(kFullMask, value, offset);
  return value;
}

// The sum of `value` over the block; `scratch` holds 32 ints of shared memory.
__device__ int block_sum_int(int value, int* scratch) {
  int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  value = warp_sum_int(value);
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < static_cast<int>(blockDim.x / kWarpSize) ? scratch[lane] : 0;
  return warp_sum_int(value);
}

// The number of valid assignments whose expert is below `expert`: where the expert's block of rows starts.
__device__ int rows_before_expert(const int32_t* topk_indices, int64_t assignments, int expert, int* scratch) {
  int count = 0;
  for (int64_t a = threadIdx.x; a < assignments; a += blockDim.x) {
    int32_t other = topk_indices[a];
    count += other >= 0 && other < expert;
  }
  return block_sum_int(count, scratch);
}

// Block e places the assignments of expert e at rows offsets[e], offsets[e] + 1, ... in (t, k) order: a tile's
// matches are ranked by the prefix sum over threads, each thread holding kItemsPerThread consecutive assignments.
__global__ void routing_plan_kernel(int32_t* positions, int32_t* sources, int32_t* expert_offsets,
                                    const int32_t* topk_indices, int64_t assignments, int64_t experts) {
  __shared__ int scratch[32];
  __shared__ int warp_matches[32];
  int expert = blockIdx.x;
  int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize, warps = blockDim.x / kWarpSize;
  int next_row = rows_before_expert(topk_indices, assignments, expert, scratch);
  if (threadIdx.x == 0) expert_offsets[expert] = next_row;
  for (int64_t tile = 0; tile < assignments; tile += kTile) {
    int64_t first = tile + static_cast<int64_t>(threadIdx.x) * kItemsPerThread;
    int matches = 0;
    for (int i = 0; i < kItemsPerThread; ++i) matches += first + i < assignments && topk_indices[first + i] == expert;
    int inclusive = warp_inclusive_scan(matches, lane);
    if (lane == kWarpSize - 1) warp_matches[warp] = inclusive;
    __syncthreads();
    int row = next_row + inclusive - matches;
    for (int w = 0; w < warp; ++w) row += warp_matches[w];
    for (int w = 0; w < warps; ++w) next_row += warp_matches[w];
    for (int i = 0; i < kItemsPerThread; ++i) {
      if (first + i < assignments && topk_indices[first + i] == expert) {
        positions[first + i] = row;
        sources[row] = static_cast<int32_t>(first + i);
        ++row;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && expert == experts - 1) expert_offsets[experts] = next_row;
}

}  // namespace

cudaError_t build_routing_plan(int32_t* positions, int32_t* sources, int32_t* expert_offsets,
                               const int32_t* topk_indices, int64_t assignments, int64_t experts,
                               cudaStream_t stream) {
  routing_plan_kernel<<<static_cast<unsigned int>(experts), kPlanThreads, 0, stream>>>(
      positions, sources, expert_offsets, topk_indices, assignments, experts);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
