#include <cuda_bf16.h>

#include "framework/device/cuda/adamw_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

__device__ float load(float value) { return value; }
__device__ float load(__nv_bfloat16 value) { return __bfloat162float(value); }

// Stores `value` in the moment's dtype and returns what was stored, read back as fp32.
__device__ float store(float& slot, float value) { return slot = value; }
__device__ float store(__nv_bfloat16& slot, float value) {
  slot = __float2bfloat16_rn(value);
  return __bfloat162float(slot);
}

// a * b + c * d, each product and the sum rounded separately.
__device__ float sum_of_products(float a, float b, float c, float d) {
  return __fadd_rn(__fmul_rn(a, b), __fmul_rn(c, d));
}

template <typename Moment>
__global__ void adamw_kernel(float* params, const float* grads, Moment* exp_avg, Moment* exp_avg_sq,
                             AdamWScalars s, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    float g = grads[i];
    float first = store(exp_avg[i], sum_of_products(s.beta1, load(exp_avg[i]), 1.0f - s.beta1, g));
    float second =
        store(exp_avg_sq[i], sum_of_products(s.beta2, load(exp_avg_sq[i]), __fmul_rn(1.0f - s.beta2, g), g));
    float denominator = __fadd_rn(__fdiv_rn(__fsqrt_rn(second), s.bias_correction2_sqrt), s.eps);
    params[i] = __fsub_rn(__fmul_rn(params[i], s.decay), __fdiv_rn(__fmul_rn(s.step_size, first), denominator));
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
