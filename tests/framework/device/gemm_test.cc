#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "framework/device/gemm.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// C = alpha * op(A) @ op(B) + beta * C in double with a naive triple loop; a, b and c are fp32.
std::vector<double> naive_gemm(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options) {
  int64_t m = c.size(0), n = c.size(1);
  int64_t k = options.transpose_a ? a.size(0) : a.size(1);
  std::vector<double> result(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        double a_value = options.transpose_a ? a.data<float>()[p * m + i] : a.data<float>()[i * k + p];
        double b_value = options.transpose_b ? b.data<float>()[j * k + p] : b.data<float>()[p * n + j];
        sum += a_value * b_value;
      }
      double previous = options.beta == 0.0f ? 0.0 : static_cast<double>(c.data<float>()[i * n + j]);
      result[static_cast<size_t>(i * n + j)] = options.alpha * sum + options.beta * previous;
    }
  }
  return result;
}

OwnedTensor to_bf16(const Tensor& values) {
  OwnedTensor result(values.shape(), DType::bf16);
  for (int64_t i = 0; i < values.numel(); ++i) result.data<bf16>()[i].bits = float_to_bf16(values.data<float>()[i]);
  return result;
}

// The fp32 values a bf16 tensor made by to_bf16 holds.
OwnedTensor rounded_to_bf16(const Tensor& values) {
  OwnedTensor result(values.shape(), DType::f32);
  for (int64_t i = 0; i < values.numel(); ++i) {
    result.data<float>()[i] = round_to_dtype(values.data<float>()[i], DType::bf16);
  }
  return result;
}

void expect_matches(const Tensor& c, const std::vector<double>& expected, double tolerance) {
  for (int64_t i = 0; i < c.numel(); ++i) {
    EXPECT_NEAR(c.data<float>()[i], expected[static_cast<size_t>(i)], tolerance) << "element " << i;
  }
}

TEST(Gemm, KnownProduct) {
  OwnedTensor a = testing::tensor_of(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  OwnedTensor b = testing::tensor_of(Shape{3, 2}, {7, 8, 9, 10, 11, 12});
  OwnedTensor c(Shape{2, 2}, DType::f32);
  gemm(c, a, b);
  EXPECT_EQ(c.data<float>()[0], 58.0f);
  EXPECT_EQ(c.data<float>()[1], 64.0f);
  EXPECT_EQ(c.data<float>()[2], 139.0f);
  EXPECT_EQ(c.data<float>()[3], 154.0f);
}

TEST(Gemm, KnownProductWithTransposedOperands) {
  // A^T = [[1, 2, 3], [4, 5, 6]], B^T = [[7, 8], [9, 10], [11, 12]]: the same product as above.
  OwnedTensor a = testing::tensor_of(Shape{3, 2}, {1, 4, 2, 5, 3, 6});
  OwnedTensor b = testing::tensor_of(Shape{2, 3}, {7, 9, 11, 8, 10, 12});
  OwnedTensor c = testing::tensor_of(Shape{2, 2}, {1, 1, 1, 1});
  gemm(c, a, b, {.transpose_a = true, .transpose_b = true, .alpha = 2.0f, .beta = -1.0f});
  EXPECT_EQ(c.data<float>()[0], 115.0f);
  EXPECT_EQ(c.data<float>()[1], 127.0f);
  EXPECT_EQ(c.data<float>()[2], 277.0f);
  EXPECT_EQ(c.data<float>()[3], 307.0f);
}

// (M, N, K) sizes: awkward, and beyond one 32 x 128 x 128 tile in every dimension.
using GemmCase = std::tuple<bool, bool, std::tuple<int64_t, int64_t, int64_t>>;

class GemmTransposes : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTransposes, MatchesNaiveDoubleProduct) {
  auto [transpose_a, transpose_b, sizes] = GetParam();
  auto [m, n, k] = sizes;
  OwnedTensor a = testing::random_tensor(transpose_a ? Shape{k, m} : Shape{m, k}, 1);
  OwnedTensor b = testing::random_tensor(transpose_b ? Shape{n, k} : Shape{k, n}, 2);
  OwnedTensor c = testing::random_tensor(Shape{m, n}, 3);
  GemmOptions options{.transpose_a = transpose_a, .transpose_b = transpose_b, .alpha = 0.75f, .beta = -0.5f};
  std::vector<double> expected = naive_gemm(c, a, b, options);
  gemm(c, a, b, options);
  expect_matches(c, expected, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, GemmTransposes,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values(std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                                                              std::tuple<int64_t, int64_t, int64_t>{3, 5, 7},
                                                              std::tuple<int64_t, int64_t, int64_t>{33, 130, 129},
                                                              std::tuple<int64_t, int64_t, int64_t>{65, 17, 300},
                                                              std::tuple<int64_t, int64_t, int64_t>{2, 257, 1})));

TEST(Gemm, BetaZeroIgnoresWhatCHeld) {
  OwnedTensor a = testing::random_tensor(Shape{4, 5}, 4), b = testing::random_tensor(Shape{5, 3}, 5);
  OwnedTensor c(Shape{4, 3}, DType::f32);
  for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  std::vector<double> expected = naive_gemm(c, a, b, {});
  gemm(c, a, b);
  expect_matches(c, expected, 1e-5);
}

TEST(Gemm, EmptyInnerDimensionScalesC) {
  OwnedTensor a(Shape{2, 0}, DType::f32), b(Shape{0, 3}, DType::f32);
  OwnedTensor c = testing::tensor_of(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  gemm(c, a, b, {.alpha = 1.0f, .beta = 3.0f});
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(c.data<float>()[i], 3.0f * static_cast<float>(i + 1));
}

TEST(Gemm, Bf16OperandsAreWidenedExactly) {
  OwnedTensor a = testing::random_tensor(Shape{37, 70}, 6), b = testing::random_tensor(Shape{45, 70}, 7);
  OwnedTensor c(Shape{37, 45}, DType::f32);
  GemmOptions options{.transpose_b = true};
  std::vector<double> expected = naive_gemm(c, rounded_to_bf16(a), rounded_to_bf16(b), options);
  gemm(c, to_bf16(a), to_bf16(b), options);
  expect_matches(c, expected, 1e-4);
  gemm(c, a, to_bf16(b), options);  // mixed fp32 x bf16
  expect_matches(c, naive_gemm(c, a, rounded_to_bf16(b), options), 1e-4);
}

TEST(Gemm, Bf16OutputIsTheFp32ResultRoundedOnce) {
  OwnedTensor a = to_bf16(testing::random_tensor(Shape{37, 300}, 8));
  OwnedTensor b = to_bf16(testing::random_tensor(Shape{45, 300}, 9));
  GemmOptions options{.transpose_b = true, .alpha = 0.5f};
  OwnedTensor wide(Shape{37, 45}, DType::f32), narrow(Shape{37, 45}, DType::bf16);
  gemm(wide, a, b, options);
  gemm(narrow, a, b, options);
  for (int64_t i = 0; i < wide.numel(); ++i) {
    ASSERT_EQ(narrow.data<bf16>()[i].bits, float_to_bf16(wide.data<float>()[i])) << "element " << i;
  }
}

TEST(Gemm, RejectsBadOperands) {
  OwnedTensor a(Shape{2, 3}, DType::f32), b(Shape{4, 2}, DType::f32), c(Shape{2, 2}, DType::f32);
  EXPECT_THROW(gemm(c, a, b), Error);  // inner dimensions 3 vs 4
  OwnedTensor square(Shape{2, 2}, DType::f32);
  EXPECT_THROW(gemm(square, square, square), Error);  // C overlaps A and B
  OwnedTensor c_bf16(Shape{2, 2}, DType::bf16), b_ok(Shape{3, 2}, DType::f32);
  EXPECT_THROW(gemm(c_bf16, a, b_ok, {.beta = 1.0f}), Error);  // a bf16 C is written, never accumulated into
  OwnedTensor c_f16(Shape{2, 2}, DType::f16);
  EXPECT_THROW(gemm(c_f16, a, b_ok), Error);  // C must be fp32 or bf16
  OwnedTensor ids(Shape{3, 2}, DType::i32);
  EXPECT_THROW(gemm(c, a, ids), Error);  // B must be fp32 or bf16
}

}  // namespace
}  // namespace hai
