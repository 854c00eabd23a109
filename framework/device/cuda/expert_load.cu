#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

__global__ void count_kernel(int32_t* load, const int32_t* topk_indices, int64_t assignments, int64_t experts) {
  for (int64_t i = grid_index(); i < assignments; i += grid_stride()) {
    int32_t expert = topk_indices[i];
    if (expert >= 0 && expert < experts) atomicAdd(&load[expert], 1);
  }
}

// One block; every thread sums the (few) loads itself, then updates its experts.
__global__ void bias_kernel(float* bias, const int32_t* load, float gamma, const float* skip_on_nan, int64_t experts) {
  if (skip_on_nan != nullptr && isnan(*skip_on_nan)) return;
  long long total = 0;
  for (int64_t e = 0; e < experts; ++e) total += load[e];
  for (int64_t e = threadIdx.x; e < experts; e += blockDim.x) {
    long long mean_minus_load = total - experts * static_cast<long long>(load[e]);  // times E, exact
    float sign = mean_minus_load > 0 ? 1.0f : (mean_minus_load < 0 ? -1.0f : 0.0f);
    bias[e] += gamma * sign;
  }
}

}  // namespace

cudaError_t accumulate_expert_load(int32_t* load, const int32_t* topk_indices, int64_t assignments, int64_t experts,
                                   cudaStream_t stream) {
  if (assignments == 0) return cudaSuccess;
  count_kernel<<<grid_for(assignments), kThreads, 0, stream>>>(load, topk_indices, assignments, experts);
  return cudaGetLastError();
}

cudaError_t update_router_bias(float* bias, const int32_t* load, float gamma, const float* skip_on_nan,
                               int64_t experts, cudaStream_t stream) {
  if (experts == 0) return cudaSuccess;
  bias_kernel<<<1, kThreads, 0, stream>>>(bias, load, gamma, skip_on_nan, experts);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
