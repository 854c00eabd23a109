#pragma once
// The rotation of one RoPE pair (framework/device/rope.h), shared by the rope kernels and the kernels that rotate
// in their epilogue (the MLA attention backward's d_q). Included only by .cu files.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace hai::cuda::kernels {

// Pair i of the rotated block, (real, imaginary), rotated by sin_sign * angle(position, i) from the cos and sin
// tables [table_positions, pairs] (NaN for a position outside them): every product and sum rounded separately, as
// the CPU op does.
__device__ inline float2 rotated_pair(float real, float imaginary, int64_t i, int32_t position, const float* cos,
                                      const float* sin, int64_t pairs, int64_t table_positions, float sin_sign) {
  if (position < 0 || position >= table_positions) return float2{NAN, NAN};
  float c = cos[position * pairs + i];
  float s = sin_sign * sin[position * pairs + i];
  return float2{__fsub_rn(__fmul_rn(real, c), __fmul_rn(imaginary, s)),
                __fadd_rn(__fmul_rn(real, s), __fmul_rn(imaginary, c))};
}

}  // namespace hai::cuda::kernels
