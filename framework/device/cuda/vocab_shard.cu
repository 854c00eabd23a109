#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/ops.h"

namespace hai::cuda::kernels {
namespace {

// The max of `value` over the block (blockDim.x == kThreads), returned to every thread. scratch: 32 floats of
// shared memory; the call begins with a barrier, so consecutive calls may share it.
__device__ float block_max(float value, float* scratch) {
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < kThreads / 32 ? scratch[lane] : -INFINITY;
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// The sum of `value` over the block in double, returned to every thread (as block_max).
__device__ double block_sum_double(double value, double* scratch) {
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < kThreads / 32 ? scratch[lane] : 0.0;
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// The shard's row of a global id, or -1.
__device__ int64_t shard_row(int32_t id, int64_t first, int64_t classes) {
  int64_t row = id - first;
  return row >= 0 && row < classes ? row : -1;
}

// One block per row: row_max[row] = max of logits[row, :].
__global__ void __launch_bounds__(kThreads)
    row_max_kernel(float* row_max, const float* logits, int64_t classes) {
  __shared__ float scratch[32];
  const float* row = logits + blockIdx.x * classes;  // [classes]
  float maximum = -INFINITY;
  for (int64_t v = threadIdx.x; v < classes; v += kThreads) maximum = fmaxf(maximum, row[v]);
  maximum = block_max(maximum, scratch);
  if (threadIdx.x == 0) row_max[blockIdx.x] = maximum;
}

// One block per row: stats[0 and 1, row] = sum_v exp(logit - max) split hi + lo, stats[2, row] = the target logit.
__global__ void __launch_bounds__(kThreads)
    softmax_stats_kernel(float* stats, const float* logits, const float* row_max, const int32_t* targets,
                         int64_t first, int64_t rows, int64_t classes) {
  __shared__ double scratch[32];
  const float* row = logits + blockIdx.x * classes;  // [classes]
  float maximum = row_max[blockIdx.x];
  double sum = 0.0;
  for (int64_t v = threadIdx.x; v < classes; v += kThreads) sum += expf(row[v] - maximum);
  sum = block_sum_double(sum, scratch);
  if (threadIdx.x != 0) return;
  auto high = static_cast<float>(sum);
  stats[blockIdx.x] = high;
  stats[rows + blockIdx.x] = static_cast<float>(sum - high);
  int64_t target_row = shard_row(targets[blockIdx.x], first, classes);
  stats[2 * rows + blockIdx.x] = target_row >= 0 ? row[target_row] : 0.0f;
}

// One block per row: losses[row] = log(sum) + max - target logit (0 if ignored) and, when d_logits is not null,
// d_logits[row, v] = (exp(logit - max) / sum - onehot) * scale (a zero row if ignored). Each element of d_logits is
// written by the thread that read its logit (so d_logits may alias the logits).
template <typename Gradient>
__global__ void __launch_bounds__(kThreads)
    loss_and_grad_kernel(float* losses, Gradient* d_logits, const float* logits, const float* row_max,
                         const float* stats, const int32_t* targets, int64_t first, float scale,
                         int32_t ignore_index, int64_t rows, int64_t classes) {
  int32_t target = targets[blockIdx.x];
  float maximum = row_max[blockIdx.x];
  double sum = static_cast<double>(stats[blockIdx.x]) + stats[rows + blockIdx.x];
  bool ignored = target == ignore_index;
  if (threadIdx.x == 0) {
    losses[blockIdx.x] = ignored ? 0.0f : static_cast<float>(log(sum) + maximum - stats[2 * rows + blockIdx.x]);
  }
  if (d_logits == nullptr) return;
  const float* row = logits + blockIdx.x * classes;  // [classes]
  Gradient* d_row = d_logits + blockIdx.x * classes;  // [classes], may alias row
  int64_t target_row = ignored ? -1 : shard_row(target, first, classes);
  auto inverse_sum = static_cast<float>(1.0 / sum);
  for (int64_t v = threadIdx.x; v < classes; v += kThreads) {
    if (ignored) {
      store(d_row + v, 0.0f);
      continue;
    }
    float probability = expf(row[v] - maximum) * inverse_sum;
    store(d_row + v, (probability - (v == target_row ? 1.0f : 0.0f)) * scale);
  }
}

}  // namespace

cudaError_t vocab_shard_row_max(float* row_max, const float* logits, int64_t rows, int64_t classes,
                                cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  row_max_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(row_max, logits, classes);
  return cudaGetLastError();
}

cudaError_t vocab_shard_softmax_stats(float* stats, const float* logits, const float* row_max,
                                      const int32_t* targets, int64_t first, int64_t rows, int64_t classes,
                                      cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  softmax_stats_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(stats, logits, row_max, targets,
                                                                                first, rows, classes);
  return cudaGetLastError();
}

cudaError_t vocab_shard_loss_and_grad(float* losses, void* d_logits, bool bf16_gradient, const float* logits,
                                      const float* row_max, const float* stats, const int32_t* targets,
                                      int64_t first, float scale, int32_t ignore_index, int64_t rows,
                                      int64_t classes, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  auto blocks = static_cast<unsigned int>(rows);
  if (bf16_gradient) {
    loss_and_grad_kernel<<<blocks, kThreads, 0, stream>>>(losses, static_cast<__nv_bfloat16*>(d_logits), logits,
                                                          row_max, stats, targets, first, scale, ignore_index, rows,
                                                          classes);
  } else {
    loss_and_grad_kernel<<<blocks, kThreads, 0, stream>>>(losses, static_cast<float*>(d_logits), logits, row_max,
                                                          stats, targets, first, scale, ignore_index, rows, classes);
  }
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
