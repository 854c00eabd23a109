// Exhaustive checks of the scalar conversions: every bf16/fp16 bit pattern (65536) and every e4m3 pattern (256)
// decodes to the value its fields define, re-encodes to itself, and float inputs between neighbouring values
// round to nearest with ties to even.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "framework/core/dtype.h"
#include "framework/core/error.h"

namespace hai {
namespace {

// The value a sign/exponent/mantissa encoding stands for, computed in double from the IEEE-style definition.
double field_value(uint32_t bits, int exponent_bits, int mantissa_bits) {
  int bias = (1 << (exponent_bits - 1)) - 1;
  uint32_t mantissa = bits & ((1u << mantissa_bits) - 1);
  uint32_t exponent = (bits >> mantissa_bits) & ((1u << exponent_bits) - 1);
  double sign = (bits >> (exponent_bits + mantissa_bits)) & 1 ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(static_cast<double>(mantissa), 1 - bias - mantissa_bits);
  return sign * std::ldexp(static_cast<double>((1u << mantissa_bits) + mantissa),
                           static_cast<int>(exponent) - bias - mantissa_bits);
}

TEST(Bf16, EveryPatternDecodesAndRoundTrips) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    float value = bf16_to_float(static_cast<uint16_t>(bits));
    bool is_special = ((bits >> 7) & 0xff) == 0xff;
    if (!is_special) {
      EXPECT_EQ(static_cast<double>(value), field_value(bits, 8, 7)) << bits;
    }
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(value)))) << bits;
    } else {
      EXPECT_EQ(float_to_bf16(value), bits) << bits;
    }
  }
}

// For each pair of adjacent positive finite values of a format, the midpoint rounds to the even one, and points
// just inside the midpoint round to the nearer one.
template <typename Decode, typename Encode>
void check_round_to_nearest_even(uint32_t max_finite_bits, Decode decode, Encode encode, uint32_t sign_bit) {
  for (uint32_t low = 0; low < max_finite_bits; ++low) {
    uint32_t high = low + 1;
    double a = decode(low), b = decode(high);
    double mid = (a + b) / 2;
    uint32_t even = (low % 2 == 0) ? low : high;
    float midpoint = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(midpoint), mid) << "midpoint not exact in float";
    EXPECT_EQ(encode(midpoint), even) << "tie between " << low << " and " << high;
    EXPECT_EQ(encode(-midpoint), even | sign_bit) << "negative tie between " << low << " and " << high;
    float below = std::nextafter(midpoint, -1.0f);
    float above = std::nextafter(midpoint, std::numeric_limits<float>::infinity());
    EXPECT_EQ(encode(below), low) << low;
    EXPECT_EQ(encode(above), high) << high;
  }
}

TEST(Bf16, RoundsToNearestEven) {
  check_round_to_nearest_even(
      0x7f7f, [](uint32_t b) { return static_cast<double>(bf16_to_float(static_cast<uint16_t>(b))); },
      [](float v) { return static_cast<uint32_t>(float_to_bf16(v)); }, 0x8000);
}

TEST(Bf16, OverflowAndSpecials) {
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds past the largest finite bf16
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
}

TEST(Fp16, EveryPatternDecodesAndRoundTrips) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    float value = fp16_to_float(static_cast<uint16_t>(bits));
    bool is_special = ((bits >> 10) & 0x1f) == 0x1f;
    if (!is_special) {
      EXPECT_EQ(static_cast<double>(value), field_value(bits, 5, 10)) << bits;
      EXPECT_EQ(float_to_fp16(value), bits) << bits;
    } else if ((bits & 0x3ff) == 0) {
      EXPECT_TRUE(std::isinf(value)) << bits;
      EXPECT_EQ(float_to_fp16(value), bits) << bits;
    } else {
      EXPECT_TRUE(std::isnan(value)) << bits;
      EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(value)))) << bits;
    }
  }
}

TEST(Fp16, RoundsToNearestEvenAndOverflows) {
  check_round_to_nearest_even(
      0x7bff, [](uint32_t b) { return static_cast<double>(fp16_to_float(static_cast<uint16_t>(b))); },
      [](float v) { return static_cast<uint32_t>(float_to_fp16(v)); }, 0x8000);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16(65519.99f), 0x7bff);  // below the midpoint to 65536: stays finite
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);   // the tie rounds to even = infinity
  EXPECT_EQ(float_to_fp16(1e-8f), 0x0000);      // below half the smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
}

TEST(E4m3, EveryPatternDecodesAndRoundTrips) {
  int nan_count = 0;
  for (uint32_t bits = 0; bits < 256; ++bits) {
    float value = e4m3_to_float(static_cast<uint8_t>(bits));
    if ((bits & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(value)) << bits;
      ++nan_count;
      continue;
    }
    EXPECT_EQ(static_cast<double>(value), field_value(bits, 4, 3)) << bits;
    EXPECT_EQ(float_to_e4m3(value), bits) << bits;
  }
  EXPECT_EQ(nan_count, 2);
  EXPECT_EQ(e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
}

TEST(E4m3, RoundsToNearestEven) {
  check_round_to_nearest_even(
      0x7d, [](uint32_t b) { return static_cast<double>(e4m3_to_float(static_cast<uint8_t>(b))); },
      [](float v) { return static_cast<uint32_t>(float_to_e4m3(v)); }, 0x80);
}

TEST(E4m3, SaturatesAndKeepsNan) {
  EXPECT_EQ(float_to_e4m3(448.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(460.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(1e30f), 0x7e);
  EXPECT_EQ(float_to_e4m3(-1e30f), 0xfe);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::infinity()), 0x7e);
  EXPECT_EQ(float_to_e4m3(-std::numeric_limits<float>::infinity()), 0xfe);
  EXPECT_TRUE(std::isnan(e4m3_to_float(float_to_e4m3(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(float_to_e4m3(-std::numeric_limits<float>::quiet_NaN()), 0x7f);  // one NaN, whatever its sign
  EXPECT_EQ(std::bit_cast<uint32_t>(e4m3_to_float(0xff)), 0x7fc00000u);      // the canonical quiet NaN
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -11)), 0x00);  // a quarter of the smallest subnormal
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);  // half of it: tie to even (zero)
  EXPECT_EQ(float_to_e4m3(std::ldexp(3.0f, -11)), 0x01);
}

TEST(DType, NamesAndSizes) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::e4m3, DType::i32, DType::i64, DType::u8,
                      DType::u16}) {
    EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
  }
  EXPECT_EQ(dtype_size(DType::e4m3), 1u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_THROW(parse_dtype("fp7"), Error);
  EXPECT_EQ(round_to_dtype(1.0f + 1.0f / 256, DType::bf16), 1.0f);  // tie to even
}

}  // namespace
}  // namespace hai
