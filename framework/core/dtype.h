#pragma once
// Element types and exact scalar conversions. Conversions from float round to nearest, ties to even; NaN stays NaN.
// bf16 and fp16 overflow to infinity as IEEE does. e4m3 (OCP FP8 E4M3 "fn": no infinities, max 448) saturates:
// finite values beyond 448 in magnitude, and infinity, become +-448 (as DeepSeek and cuBLASLt do); every NaN encodes
// to 0x7f and both NaN patterns decode to the quiet NaN 0x7fc00000 (NaN sign/payload differ between CPU and GPU).

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hai {

enum class DType : uint8_t { f32, bf16, f16, e4m3, i32, i64, u8, u16 };

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
// Parses "fp32"/"f32", "bf16", "fp16"/"f16", "e4m3"/"fp8", "i32", "i64", "u8", "u16"; throws hai::Error otherwise.
DType parse_dtype(std::string_view name);

float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);

float fp16_to_float(uint16_t bits);
uint16_t float_to_fp16(float value);

inline constexpr float kE4m3Max = 448.0f;
float e4m3_to_float(uint8_t bits);
uint8_t float_to_e4m3(float value);

// Rounds a float to the nearest value of the given floating dtype and back (f32 is the identity).
float round_to_dtype(float value, DType dtype);

// Typed 16-bit and 8-bit storage so that tensors of different formats cannot be confused.
struct bf16 {
  uint16_t bits;
};
struct fp16 {
  uint16_t bits;
};
struct e4m3 {
  uint8_t bits;
};

}  // namespace hai
