#include <cuda_bf16.h>

#include <cmath>

#include "framework/device/cuda/cross_entropy_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

// sum_v exp(logit_v - maximum) over the values seen so far.
struct SoftmaxState {
  float maximum = -INFINITY;
  float sum = 0.0f;
};

__device__ SoftmaxState merge(SoftmaxState a, SoftmaxState b) {
  float maximum = fmaxf(a.maximum, b.maximum);
  float a_part = a.sum == 0.0f ? 0.0f : a.sum * expf(a.maximum - maximum);
  float b_part = b.sum == 0.0f ? 0.0f : b.sum * expf(b.maximum - maximum);
  return {maximum, a_part + b_part};
}

// One more value: a single exponential, rescaling the sum only when the maximum grows.
__device__ SoftmaxState add(SoftmaxState state, float value) {
  if (value <= state.maximum) return {state.maximum, state.sum + expf(value - state.maximum)};
  float rescaled = state.sum == 0.0f ? 0.0f : state.sum * expf(state.maximum - value);
  return {value, rescaled + 1.0f};
}

// The softmax state of a whole row, returned to every thread of the block.
__device__ SoftmaxState row_softmax(const float* row, int64_t classes) {
  __shared__ SoftmaxState scratch[32];
  SoftmaxState state;
  for (int64_t v = threadIdx.x; v < classes; v += blockDim.x) state = add(state, row[v]);
  for (int offset = 16; offset > 0; offset /= 2) {
    SoftmaxState other{__shfl_xor_sync(0xffffffffu, state.maximum, offset),
                       __shfl_xor_sync(0xffffffffu, state.sum, offset)};
    state = merge(state, other);
  }
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;
  if (lane == 0) scratch[warp] = state;
  __syncthreads();
  SoftmaxState total;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total = merge(total, scratch[w]);
  return total;
}

__device__ bool is_class(int32_t target, int64_t classes) { return target >= 0 && target < classes; }

__global__ void cross_entropy_forward_kernel(float* losses, const float* logits, const int32_t* targets,
                                             int32_t ignore_index, int64_t classes) {
  int32_t target = targets[blockIdx.x];
  if (target == ignore_index) {
    if (threadIdx.x == 0) losses[blockIdx.x] = 0.0f;
    return;
  }
  const float* row = logits + blockIdx.x * classes;  // [classes]
  SoftmaxState softmax = row_softmax(row, classes);
  if (threadIdx.x != 0) return;
  losses[blockIdx.x] = is_class(target, classes) ? logf(softmax.sum) + softmax.maximum - row[target] : NAN;
}

// The gradient rows, and the losses too unless losses is null (the forward kernel's expression, so the same bits).
template <typename Gradient>
__global__ void cross_entropy_backward_kernel(float* losses, Gradient* d_logits, const float* logits,
                                              const int32_t* targets, float scale, int32_t ignore_index,
                                              int64_t classes) {
  int32_t target = targets[blockIdx.x];
  Gradient* d_row = d_logits + blockIdx.x * classes;  // [classes], may alias row
  if (target == ignore_index) {
    if (losses && threadIdx.x == 0) losses[blockIdx.x] = 0.0f;
    for (int64_t v = threadIdx.x; v < classes; v += blockDim.x) store(d_row + v, 0.0f);
    return;
  }
  const float* row = logits + blockIdx.x * classes;  // [classes]
  SoftmaxState softmax = row_softmax(row, classes);
  bool valid = is_class(target, classes);
  if (losses) {
    if (threadIdx.x == 0) losses[blockIdx.x] = valid ? logf(softmax.sum) + softmax.maximum - row[target] : NAN;
    __syncthreads();  // row[target] is read before any thread overwrites it (d_logits may alias logits)
  }
  // NOTE: below, element v is read and written by the same thread only, so d_logits may alias logits.
  float inverse_sum = 1.0f / softmax.sum;
  for (int64_t v = threadIdx.x; v < classes; v += blockDim.x) {
    float probability = expf(row[v] - softmax.maximum) * inverse_sum;
    float onehot = v == target ? 1.0f : 0.0f;
    store(d_row + v, valid ? (probability - onehot) * scale : NAN);
  }
}

}  // namespace

cudaError_t cross_entropy_forward(float* losses, const float* logits, const int32_t* targets, int32_t ignore_index,
                                  int64_t rows, int64_t classes, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  cross_entropy_forward_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(losses, logits, targets,
                                                                                          ignore_index, classes);
  return cudaGetLastError();
}

cudaError_t cross_entropy_backward(float* d_logits, const float* logits, const int32_t* targets, float scale,
                                   int32_t ignore_index, int64_t rows, int64_t classes, cudaStream_t stream) {
  return cross_entropy_loss_and_grad(nullptr, d_logits, false, logits, targets, scale, ignore_index, rows, classes,
                                     stream);
}

cudaError_t cross_entropy_loss_and_grad(float* losses, void* d_logits, bool bf16_gradient, const float* logits,
                                        const int32_t* targets, float scale, int32_t ignore_index, int64_t rows,
                                        int64_t classes, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  auto blocks = static_cast<unsigned int>(rows);
  if (bf16_gradient) {
    cross_entropy_backward_kernel<<<blocks, kThreads, 0, stream>>>(
        losses, static_cast<__nv_bfloat16*>(d_logits), logits, targets, scale, ignore_index, classes);
  } else {
    cross_entropy_backward_kernel<<<blocks, kThreads, 0, stream>>>(losses, static_cast<float*>(d_logits), logits,
                                                                   targets, scale, ignore_index, classes);
  }
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
