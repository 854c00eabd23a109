#include <cuda_bf16.h>

#include "framework/device/cuda/adamw_element.cuh"
#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

template <typename Moment>
__global__ void adamw_kernel(float* params, const float* grads, Moment* exp_avg, Moment* exp_avg_sq,
                             AdamWScalars s, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    adamw_element(params[i], grads[i], exp_avg[i], exp_avg_sq[i], s, s.decay);
  }
}

}  // namespace

cudaError_t adamw_step(float* params, const float* grads, void* exp_avg, void* exp_avg_sq, bool bf16_moments,
                       const AdamWScalars& scalars, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (bf16_moments) {
    adamw_kernel<<<grid_for(n), kThreads, 0, stream>>>(params, grads, static_cast<__nv_bfloat16*>(exp_avg),
                                                       static_cast<__nv_bfloat16*>(exp_avg_sq), scalars, n);
  } else {
    adamw_kernel<<<grid_for(n), kThreads, 0, stream>>>(params, grads, static_cast<float*>(exp_avg),
                                                       static_cast<float*>(exp_avg_sq), scalars, n);
  }
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
