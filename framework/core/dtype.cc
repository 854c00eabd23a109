#include "framework/core/dtype.h"

#include <bit>
#include <cmath>

#include "framework/core/error.h"

namespace hai {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::e4m3: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
    case DType::u16: return 2;
  }
  HAI_THROW("unknown dtype {}", static_cast<int>(dtype));
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::f16: return "fp16";
    case DType::e4m3: return "e4m3";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::u16: return "u16";
  }
  return "unknown";
}

DType parse_dtype(std::string_view name) {
  if (name == "fp32" || name == "f32") return DType::f32;
  if (name == "bf16") return DType::bf16;
  if (name == "fp16" || name == "f16") return DType::f16;
  if (name == "e4m3" || name == "fp8") return DType::e4m3;
  if (name == "i32") return DType::i32;
  if (name == "i64") return DType::i64;
  if (name == "u8") return DType::u8;
  if (name == "u16") return DType::u16;
  HAI_THROW("unknown dtype '{}'", name);
}

float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x0040);  // keep sign, force quiet NaN
  // Round to nearest even on the 16 dropped bits; a carry into the exponent rounds up to the next binade or inf.
  uint32_t rounding_bias = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

float fp16_to_float(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000 | (mantissa << 13));  // inf or NaN
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

namespace {

// Rounds |value| (finite, non-negative) to an integer multiple of 2^quantum_exponent, ties to even.
// Exact: the quotient is a power-of-two scaling, and nearbyint rounds ties to even in the default mode.
float round_to_quantum(float magnitude, int quantum_exponent) {
  return std::ldexp(std::nearbyint(std::ldexp(magnitude, -quantum_exponent)), quantum_exponent);
}

// Encodes a finite non-negative value that is already a representable magnitude of a format with
// `mantissa_bits` and exponent bias `bias` (subnormals have biased exponent 0).
uint32_t encode_magnitude(float magnitude, int mantissa_bits, int bias) {
  if (magnitude == 0.0f) return 0;
  int exponent = std::ilogb(magnitude);
  int min_normal_exponent = 1 - bias;
  if (exponent < min_normal_exponent) {  // subnormal
    return static_cast<uint32_t>(std::ldexp(magnitude, bias - 1 + mantissa_bits));
  }
  uint32_t mantissa = static_cast<uint32_t>(std::ldexp(magnitude, mantissa_bits - exponent)) - (1u << mantissa_bits);
  return (static_cast<uint32_t>(exponent + bias) << mantissa_bits) | mantissa;
}

// The spacing (as a power of two) of representable values around |magnitude| in a format with the given
// mantissa bits and bias; subnormals share the spacing of the smallest normal binade.
int quantum_exponent(float magnitude, int mantissa_bits, int bias) {
  int min_normal_exponent = 1 - bias;
  int exponent = magnitude == 0.0f ? min_normal_exponent : std::max(std::ilogb(magnitude), min_normal_exponent);
  return exponent - mantissa_bits;
}

}  // namespace

uint16_t float_to_fp16(float value) {
  uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  if (std::isnan(value)) return static_cast<uint16_t>(sign | 0x7e00);
  float magnitude = std::fabs(value);
  if (std::isinf(value)) return static_cast<uint16_t>(sign | 0x7c00);
  float rounded = round_to_quantum(magnitude, quantum_exponent(magnitude, 10, 15));
  if (rounded >= 65536.0f) return static_cast<uint16_t>(sign | 0x7c00);  // overflow to infinity
  return static_cast<uint16_t>(sign | encode_magnitude(rounded, 10, 15));
}

float e4m3_to_float(uint8_t bits) {
  float sign = (bits & 0x80) ? -1.0f : 1.0f;
  uint32_t exponent = (bits >> 3) & 0xf;
  uint32_t mantissa = bits & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();  // canonical, unsigned
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: m * 2^-9
  return sign * std::ldexp(static_cast<float>(8 + mantissa), static_cast<int>(exponent) - 10);
}

uint8_t float_to_e4m3(float value) {
  if (std::isnan(value)) return 0x7f;  // NOTE: one NaN: a NaN's sign bit differs between CPUs and GPUs
  uint8_t sign = std::signbit(value) ? 0x80 : 0;
  float magnitude = std::fabs(value);
  if (magnitude >= kE4m3Max) return static_cast<uint8_t>(sign | 0x7e);  // saturate (inf included)
  float rounded = round_to_quantum(magnitude, quantum_exponent(magnitude, 3, 7));
  if (rounded >= kE4m3Max) return static_cast<uint8_t>(sign | 0x7e);
  return static_cast<uint8_t>(sign | encode_magnitude(rounded, 3, 7));
}

float round_to_dtype(float value, DType dtype) {
  switch (dtype) {
    case DType::f32: return value;
    case DType::bf16: return bf16_to_float(float_to_bf16(value));
    case DType::f16: return fp16_to_float(float_to_fp16(value));
    case DType::e4m3: return e4m3_to_float(float_to_e4m3(value));
    default: HAI_THROW("round_to_dtype: {} is not a floating dtype", dtype_name(dtype));
  }
}

}  // namespace hai
