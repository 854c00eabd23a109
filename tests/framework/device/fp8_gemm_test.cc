// The FP8 GEMM's CPU reference is exactly "dequantise, then the fp32 GEMM", and the transposed quantisations are
// bit for bit the transposes of the plain ones.

#include "framework/device/fp8_gemm.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "framework/core/rng.h"
#include "framework/device/fp8_quantize.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

int64_t tiles(int64_t extent) { return (extent + 127) / 128; }

// [rows, cols] fp32 with magnitudes spread over several binades, so that tiles get different scales.
OwnedTensor spread_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  OwnedTensor x(Shape{rows, cols}, DType::f32);
  CounterRng rng(seed, 0);
  for (int64_t i = 0; i < rows * cols; ++i) {
    float magnitude = std::ldexp(1.0f, static_cast<int>((i / 97) % 9) - 4);
    x.data<float>()[i] = magnitude * rng.normal(static_cast<uint64_t>(i));
  }
  return x;
}

struct Quantized {
  OwnedTensor values, scales;
  Fp8Scaling scaling;
  Fp8Matrix matrix() const { return {values, scales, scaling}; }
};

Quantized quantized(const Tensor& x, Fp8Scaling scaling) {
  int64_t rows = x.size(0), cols = x.size(1);
  Shape scale_shape = scaling == Fp8Scaling::tile_1x128 ? Shape{rows, tiles(cols)} : Shape{tiles(rows), tiles(cols)};
  Quantized q{OwnedTensor(x.shape(), DType::e4m3), OwnedTensor(scale_shape, DType::f32), scaling};
  if (scaling == Fp8Scaling::tile_1x128) {
    quantize_1x128(q.values, q.scales, x);
  } else {
    quantize_128x128(q.values, q.scales, x);
  }
  return q;
}

// dequant(q)[r, k] computed element by element from the scale rule.
float dequantized(const Quantized& q, int64_t r, int64_t k) {
  int64_t cols = q.values.shape()[1];
  float scale = q.scaling == Fp8Scaling::tile_1x128 ? q.scales.data<float>()[r * tiles(cols) + k / 128]
                                                     : q.scales.data<float>()[(r / 128) * tiles(cols) + k / 128];
  return e4m3_to_float(q.values.data<e4m3>()[r * cols + k].bits) * scale;
}

template <typename T>
void expect_transposed_bits(const Tensor& transposed, const Tensor& plain, const char* what) {
  int64_t rows = plain.size(0), cols = plain.size(1);
  ASSERT_EQ(transposed.shape(), (Shape{cols, rows})) << what;
  int64_t mismatches = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      mismatches += std::memcmp(&transposed.data<T>()[c * rows + r], &plain.data<T>()[r * cols + c], sizeof(T)) != 0;
    }
  }
  EXPECT_EQ(mismatches, 0) << what;
}

TEST(Fp8TransposedQuantize, Tile128x1IsTheTransposeOfThePlainLayout) {
  OwnedTensor x = spread_matrix(300, 70, 1);  // [M, K], partial tiles along M
  OwnedTensor q(Shape{300, 70}, DType::e4m3), scales(Shape{3, 70}, DType::f32);
  OwnedTensor q_t(Shape{70, 300}, DType::e4m3), scales_t(Shape{70, 3}, DType::f32);
  quantize_128x1(q, scales, x, /*pow2_scales=*/true);
  quantize_128x1_transposed(q_t, scales_t, x, /*pow2_scales=*/true);
  expect_transposed_bits<e4m3>(q_t, q, "values");
  expect_transposed_bits<float>(scales_t, scales, "scales");
}

TEST(Fp8TransposedQuantize, Block128x128IsTheTransposeOfThePlainLayout) {
  OwnedTensor x = spread_matrix(200, 290, 2);  // [M, K], partial blocks on both edges
  OwnedTensor q(Shape{200, 290}, DType::e4m3), scales(Shape{2, 3}, DType::f32);
  OwnedTensor q_t(Shape{290, 200}, DType::e4m3), scales_t(Shape{3, 2}, DType::f32);
  quantize_128x128(q, scales, x);
  quantize_128x128_transposed(q_t, scales_t, x);
  expect_transposed_bits<e4m3>(q_t, q, "values");
  expect_transposed_bits<float>(scales_t, scales, "scales");
}

TEST(Fp8TransposedQuantize, RefusesThePlainShapes) {
  OwnedTensor x = spread_matrix(4, 6, 3);
  OwnedTensor q(Shape{4, 6}, DType::e4m3), scales(Shape{1, 6}, DType::f32);
  EXPECT_THROW(quantize_128x1_transposed(q, scales, x), Error);
}

// C = dequant(A) dequant(B)^T summed in k order in fp32 (framework/device/cpu/gemm.cc), then + beta * C.
void expect_dequantised_product(const Tensor& c, const Quantized& a, const Quantized& b, const Tensor& c_before,
                                float beta) {
  int64_t m = a.values.shape()[0], n = b.values.shape()[0], k = a.values.shape()[1];
  int64_t mismatches = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum += dequantized(a, i, p) * dequantized(b, j, p);
      float expected = beta == 0.0f ? sum : sum + beta * c_before.data<float>()[i * n + j];
      mismatches += std::bit_cast<uint32_t>(expected) != std::bit_cast<uint32_t>(c.data<float>()[i * n + j]);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Fp8GemmCpu, ActivationTimesBlockScaledWeightIsTheDequantisedProduct) {
  Quantized a = quantized(spread_matrix(130, 300, 4), Fp8Scaling::tile_1x128);     // [M, K]
  Quantized b = quantized(spread_matrix(140, 300, 5), Fp8Scaling::block_128x128);  // [N, K]
  OwnedTensor c(Shape{130, 140}, DType::f32);
  c.data<float>()[0] = std::nanf("");  // beta == 0: C is not read
  fp8_gemm(c, a.matrix(), b.matrix());
  expect_dequantised_product(c, a, b, c, 0.0f);
}

// 1x128 scales given column-major ([tiles, rows], as the FP8 linear layers keep them) give the same C, bit for bit.
TEST(Fp8GemmCpu, ColumnMajorScalesGiveTheSameProduct) {
  Quantized a = quantized(spread_matrix(20, 260, 16), Fp8Scaling::tile_1x128);  // [M, K]
  Quantized b = quantized(spread_matrix(30, 260, 17), Fp8Scaling::tile_1x128);  // [N, K]
  OwnedTensor a_scales(Shape{3, 20}, DType::f32), b_scales(Shape{3, 30}, DType::f32);
  transpose_fp8_scales(a_scales, a.scales);
  transpose_fp8_scales(b_scales, b.scales);
  OwnedTensor c(Shape{20, 30}, DType::f32), c_column_major(Shape{20, 30}, DType::f32);
  fp8_gemm(c, a.matrix(), b.matrix());
  fp8_gemm(c_column_major, {a.values, a_scales, Fp8Scaling::tile_1x128, Fp8ScaleOrder::column_major},
           {b.values, b_scales, Fp8Scaling::tile_1x128, Fp8ScaleOrder::column_major});
  EXPECT_TRUE(testing::same_bytes(c, c_column_major));
  // The row-major shape, or a block-scaled operand, refused as column-major.
  EXPECT_THROW(fp8_gemm(c, {a.values, a.scales, Fp8Scaling::tile_1x128, Fp8ScaleOrder::column_major}, b.matrix()),
               Error);
}

TEST(Fp8GemmCpu, TwoTileScaledOperandsAccumulateIntoC) {
  Quantized a = quantized(spread_matrix(20, 260, 6), Fp8Scaling::tile_1x128);  // [M, K]
  Quantized b = quantized(spread_matrix(30, 260, 7), Fp8Scaling::tile_1x128);  // [N, K]
  OwnedTensor c = spread_matrix(20, 30, 8);                                     // [M, N]
  OwnedTensor c_before(Shape{20, 30}, DType::f32);
  std::memcpy(c_before.tensor().raw(), c.tensor().raw(), c.tensor().bytes());
  fp8_gemm(c, a.matrix(), b.matrix(), /*beta=*/1.0f);
  expect_dequantised_product(c, a, b, c_before, 1.0f);
}

// A bf16 C is the fp32 product rounded once to nearest even (framework/core/dtype.h's float_to_bf16), bit for bit.
TEST(Fp8GemmCpu, Bf16OutputIsTheFp32ProductRoundedOnce) {
  Quantized a = quantized(spread_matrix(130, 300, 14), Fp8Scaling::tile_1x128);     // [M, K]
  Quantized b = quantized(spread_matrix(140, 300, 15), Fp8Scaling::block_128x128);  // [N, K]
  OwnedTensor c32(Shape{130, 140}, DType::f32), c16(Shape{130, 140}, DType::bf16);
  fp8_gemm(c32, a.matrix(), b.matrix());
  fp8_gemm(c16, a.matrix(), b.matrix());
  int64_t mismatches = 0;
  for (int64_t i = 0; i < c32.numel(); ++i) {
    mismatches += c16.data<bf16>()[i].bits != float_to_bf16(c32.data<float>()[i]);
  }
  EXPECT_EQ(mismatches, 0);
}

// beta != 0 would read a bf16 C: refused, like gemm's.
TEST(Fp8GemmCpu, RefusesABf16CToAccumulateInto) {
  Quantized a = quantized(spread_matrix(8, 128, 16), Fp8Scaling::tile_1x128);
  Quantized b = quantized(spread_matrix(8, 128, 17), Fp8Scaling::tile_1x128);
  OwnedTensor c(Shape{8, 8}, DType::bf16), c16f(Shape{8, 8}, DType::f16);
  EXPECT_THROW(fp8_gemm(c, a.matrix(), b.matrix(), /*beta=*/1.0f), Error);
  EXPECT_THROW(fp8_gemm(c16f, a.matrix(), b.matrix()), Error);
}

TEST(Fp8GemmCpu, RefusesABlockScaledA) {
  Quantized a = quantized(spread_matrix(8, 128, 9), Fp8Scaling::block_128x128);
  Quantized b = quantized(spread_matrix(8, 128, 10), Fp8Scaling::tile_1x128);
  OwnedTensor c(Shape{8, 8}, DType::f32);
  EXPECT_THROW(fp8_gemm(c, a.matrix(), b.matrix()), Error);
}

TEST(Fp8GemmCpu, RefusesMismatchedShapes) {
  Quantized a = quantized(spread_matrix(8, 128, 11), Fp8Scaling::tile_1x128);
  Quantized b = quantized(spread_matrix(8, 256, 12), Fp8Scaling::tile_1x128);
  OwnedTensor c(Shape{8, 8}, DType::f32);
  EXPECT_THROW(fp8_gemm(c, a.matrix(), b.matrix()), Error);
  Quantized b_blocks = quantized(spread_matrix(8, 128, 13), Fp8Scaling::block_128x128);
  Fp8Matrix wrong_scaling = b_blocks.matrix();
  wrong_scaling.scaling = Fp8Scaling::tile_1x128;  // scales [1, 1] are not [8, 1]
  EXPECT_THROW(fp8_gemm(c, a.matrix(), wrong_scaling), Error);
}

}  // namespace
}  // namespace hai
