#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

constexpr unsigned int kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;
constexpr int64_t kValuesPerThread = 16;  // before another block is worth starting
constexpr int64_t kMaxBlocks = 1024;

__device__ double warp_sum_double(double value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(kFullMask, value, offset);
  return value;
}

// The sum of `value` over the block (a multiple of 32 threads), valid in thread 0.
__device__ double block_sum_double(double value) {
  __shared__ double scratch[32];
  int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  value = warp_sum_double(value);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < static_cast<int>(blockDim.x / kWarpSize) ? scratch[lane] : 0.0;
  return warp_sum_double(value);
}

__global__ void sum_of_squares_kernel(double* partials, const float* values, int64_t count) {
  double sum = 0.0;
  for (int64_t i = grid_index(); i < count; i += grid_stride()) {
    double value = values[i];
    sum += value * value;
  }
  sum = block_sum_double(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void sum_partials_kernel(double* total, const double* partials, int64_t count) {
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  sum = block_sum_double(sum);
  if (threadIdx.x == 0) *total = sum;
}

}  // namespace

int64_t sum_of_squares_blocks(int64_t count) {
  int64_t blocks = (count + kThreads * kValuesPerThread - 1) / (kThreads * kValuesPerThread);
  return blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks);
}

cudaError_t sum_of_squares(double* partials, const float* values, int64_t count, cudaStream_t stream) {
  sum_of_squares_kernel<<<static_cast<unsigned int>(sum_of_squares_blocks(count)), kThreads, 0, stream>>>(
      partials, values, count);
  return cudaGetLastError();
}

cudaError_t sum_partials(double* total, const double* partials, int64_t count, cudaStream_t stream) {
  sum_partials_kernel<<<1, kThreads, 0, stream>>>(total, partials, count);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
