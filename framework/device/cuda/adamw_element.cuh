#pragma once
// The arithmetic of one AdamW element on the GPU, shared by the AdamW kernels: every operation rounded separately
// (no fused multiply-add), in the CPU op's order (framework/device/cpu/adamw_element.h), so both agree bit for bit.
// Included only by .cu files.

#include <cuda_bf16.h>

#include "framework/device/cuda/ops.h"

namespace hai::cuda::kernels {

__device__ inline float load_moment(float value) { return value; }
__device__ inline float load_moment(__nv_bfloat16 value) { return __bfloat162float(value); }

// Stores `value` in the moment's dtype and returns what was stored, read back as fp32.
__device__ inline float store_moment(float& slot, float value) { return slot = value; }
__device__ inline float store_moment(__nv_bfloat16& slot, float value) {
  slot = __float2bfloat16_rn(value);
  return __bfloat162float(slot);
}

// a * b + c * d, each product and the sum rounded separately.
__device__ inline float sum_of_products(float a, float b, float c, float d) {
  return __fadd_rn(__fmul_rn(a, b), __fmul_rn(c, d));
}

// Updates one parameter p and its moments m, v from the gradient g, with the given decay factor.
template <typename Moment>
__device__ inline void adamw_element(float& p, float g, Moment& m, Moment& v, const AdamWScalars& s, float decay) {
  float first = store_moment(m, sum_of_products(s.beta1, load_moment(m), 1.0f - s.beta1, g));
  float second = store_moment(v, sum_of_products(s.beta2, load_moment(v), __fmul_rn(1.0f - s.beta2, g), g));
  float denominator = __fadd_rn(__fdiv_rn(__fsqrt_rn(second), s.bias_correction2_sqrt), s.eps);
  p = __fsub_rn(__fmul_rn(p, decay), __fdiv_rn(__fmul_rn(s.step_size, first), denominator));
}

}  // namespace hai::cuda::kernels
