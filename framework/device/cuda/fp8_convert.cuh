#pragma once
// The e4m3 conversions of the CUDA fp8 kernels (fp8_quantize_kernels.cu, swiglu.cu), bit for bit the
// CPU's (framework/device/fp8_quantize.h, framework/core/dtype.cc).

#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cfloat>
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

// Division by a tile's scale for e4m3: a multiply by the scale's correctly rounded reciprocal and one fma correction
// of the remainder (Markstein), 4 instructions where __fdiv_rn takes ~12 and a slow-path branch. NOTE: the e4m3 byte
// is IEEE division's (the CPU's) for every finite scale >= 2^-23 (scale_from_amax's are >= 1e-4 / 448) and every
// dividend up to 448 scales in magnitude (the tile's amax bounds them): the fp32 quotient is IEEE's bit for bit
// wherever it is 2^-11 or more, and below that (it can differ by an ulp when the dividend is an fp32 subnormal) both
// round to e4m3's zero of the dividend's sign. Checked on the CPU for 800M random pairs over every exponent, zeros,
// subnormals and all-ones scale significands among them. A tile with an infinity has scale +inf: reciprocal 0 and a
// finite stand-in scale make finite x -> +-0 and infinities -> NaN, as IEEE division does.
struct ScaleDivisor {
  float scale = 1.0f;
  float reciprocal = 1.0f;

  ScaleDivisor() = default;
  // NOTE: assigned in the body: nvcc's host pass does not see __frcp_rn in a member initialiser.
  __device__ explicit ScaleDivisor(float tile_scale) {
    bool infinite = isinf(tile_scale);
    scale = infinite ? FLT_MAX : tile_scale;
    reciprocal = infinite ? 0.0f : __frcp_rn(tile_scale);
  }
  __device__ float divide(float x) const {
    float quotient = __fmul_rn(x, reciprocal);
    float remainder = __fmaf_rn(-quotient, scale, x);
    // NOTE: the sign of x, for a zero x: -0 - (-0 * scale) is +0, and +0 * reciprocal + -0 is +0 again.
    return copysignf(__fmaf_rn(remainder, reciprocal, quotient), x);
  }
};

// The e4m3 bytes of low / scale and high / scale (IEEE division, as the CPU's), `low` in the low byte.
__device__ inline uint32_t quantize_pair(float low, float high, const ScaleDivisor& divisor) {
  return float2_to_e4m3x2(divisor.divide(low), divisor.divide(high));
}

// The e4m3 bytes of v0 .. v3 / scale, v0 in the low byte.
__device__ inline uint32_t quantize_quad(float v0, float v1, float v2, float v3, const ScaleDivisor& divisor) {
  uint32_t low = __nv_cvt_float2_to_fp8x2(make_float2(divisor.divide(v0), divisor.divide(v1)), __NV_SATFINITE,
                                          __NV_E4M3);
  uint32_t high = __nv_cvt_float2_to_fp8x2(make_float2(divisor.divide(v2), divisor.divide(v3)), __NV_SATFINITE,
                                           __NV_E4M3);
  return unsign_nans(low | high << 16);
}

// The max of `value` over the calling warp, returned to every lane.
__device__ inline float warp_max(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

}  // namespace hai::cuda::kernels::fp8
