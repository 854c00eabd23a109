#pragma once
// The e4m3 conversions of the CUDA fp8 kernels (fp8_quantize_kernels.cu, swiglu_fp8_kernels.cu), bit for bit the
// CPU's (framework/device/fp8_quantize.h, framework/core/dtype.cc).

#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hai::cuda::kernels::fp8 {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kMinAmax = 1e-4f;  // framework/device/fp8_quantize.h

// The scale rule of framework/device/fp8_quantize.h: max(amax, 1e-4) / 448 with IEEE division, optionally raised
// to a power of two on the bits.
__device__ inline float scale_from_amax(float amax, bool pow2_scales) {
  float scale = __fdiv_rn(fmaxf(amax, kMinAmax), kE4m3Max);
  if (!pow2_scales) return scale;
  unsigned int bits = __float_as_uint(scale);
  if ((bits & 0x007fffffu) != 0) bits = (bits & 0x7f800000u) + 0x00800000u;
  return __uint_as_float(bits);
}

// Gives every NaN byte of packed e4m3 bytes the CPU's positive sign (0xff -> 0x7f): the NaN bytes are those whose
// low seven bits are all ones, the ones where adding 1 to them carries into the byte's top bit.
__device__ inline uint32_t unsign_nans(uint32_t bytes) {
  uint32_t nan_signs = ((bytes & 0x7f7f7f7fu) + 0x01010101u) & 0x80808080u;
  return bytes & ~nan_signs;
}

// framework/core/dtype.cc float_to_e4m3 of two values, `low` in the low byte. NOTE: the hardware conversion (round
// to nearest even, saturating to +-448, subnormals m * 2^-9; sm_89 and later, cuda_fp8.h emulates it before) was
// checked against that rule on an H200 over all 2^32 floats: bit for bit, NaNs included, but PTX leaves a NaN's
// sign open, so unsign_nans makes every NaN the CPU's 0x7f.
__device__ inline uint32_t float2_to_e4m3x2(float low, float high) {
  return unsign_nans(__nv_cvt_float2_to_fp8x2(make_float2(low, high), __NV_SATFINITE, __NV_E4M3));
}

// The e4m3 bytes of low / scale and high / scale (IEEE division, as the CPU's), `low` in the low byte.
__device__ inline uint32_t quantize_pair(float low, float high, float scale) {
  return float2_to_e4m3x2(__fdiv_rn(low, scale), __fdiv_rn(high, scale));
}

// The max of `value` over the calling warp, returned to every lane.
__device__ inline float warp_max(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

}  // namespace hai::cuda::kernels::fp8
