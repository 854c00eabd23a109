// The FP8 grouped GEMM's CPU op: the dequantised product per expert (against a naive double-precision reference,
// within the fp32 summation's bound), bit for bit the dense FP8 GEMM's reference on each expert's rows, and rows
// outside the experts left alone.

#include "framework/device/grouped_gemm_fp8.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "tests/framework/device/fp8_expert_inputs.h"

namespace hai {
namespace {


using Problem = testing::Fp8GroupedProblem;
using Operands = testing::Fp8GroupedOperands;

// Empty experts, an expert of 1 row, experts over one and two 128-row tiles, N and K not multiples of 128 (K not
// even of 16), rows past offsets[E].
const Problem kAwkward{{0, 1, 129, 200, 0, 64, 3}, 5, 200, 300, 24};


OwnedTensor filled(const Shape& shape, float value) {
  OwnedTensor tensor(shape, DType::f32);
  std::fill_n(tensor.data<float>(), tensor.numel(), value);
  return tensor;
}

OwnedTensor copy_of(const Tensor& source) {
  OwnedTensor copy(source.shape(), source.dtype());
  std::memcpy(copy.tensor().raw(), source.raw(), source.bytes());
  return copy;
}

float dequantized(const Tensor& values, const Tensor& scales, int64_t row, int64_t column, int64_t scale_row) {
  int64_t k = values.size(1);
  float scale = scales.data<float>()[scale_row * testing::fp8_tiles(k) + column / kFp8TileSize];
  return e4m3_to_float(values.data<e4m3>()[row * k + column].bits) * scale;
}

// y's routed rows against sum_k x'[r, k] * W'_e[n, k] in double (+ y_before with beta 1): the fp32 sum in k order
// is within K * 2^-24 * sum_k |x' W'| of it (each of the K roundings of a product or a partial sum is at most
// 2^-24 of a partial sum of |terms|; the bound doubles that). Unrouted rows must equal y_before.
void expect_dequantised_product(const Tensor& y, const Operands& operands, const Tensor& y_before, float beta) {
  const int32_t* offsets = operands.offsets.data<int32_t>();
  Fp8ExpertWeights weights = operands.weights();
  int64_t n = y.size(1), k = operands.x_values.tensor().size(1), failures = 0;
  for (int64_t e = 0; e < operands.layout.experts; ++e) {
    Tensor w_values = weights.values.expert(e), w_scales = weights.scales.expert(e);
    for (int64_t r = offsets[e]; r < offsets[e + 1]; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < k; ++p) {
          double term = static_cast<double>(dequantized(operands.x_values, operands.x_scales, r, p, r)) *
                        dequantized(w_values, w_scales, j, p, j / kFp8TileSize);
          sum += term;
          magnitude += std::fabs(term);
        }
        double before = beta == 0.0f ? 0.0 : y_before.data<float>()[r * n + j];
        double bound = 2.0 * static_cast<double>(k) * std::ldexp(1.0, -24) * (magnitude + std::fabs(before));
        failures += !(std::fabs(y.data<float>()[r * n + j] - (sum + before)) <= bound);
      }
    }
  }
  EXPECT_EQ(failures, 0);
  int64_t routed = offsets[operands.layout.experts];
  EXPECT_EQ(std::memcmp(y.data<float>() + routed * n, y_before.data<float>() + routed * n,
                        (y.size(0) - routed) * n * sizeof(float)), 0) << "rows past offsets[E] changed";
}

TEST(GroupedGemmFp8Cpu, IsTheDequantisedProductPerExpert) {
  Operands operands = testing::fp8_grouped_operands(kAwkward, 1);
  OwnedTensor y = filled(Shape{kAwkward.rows(), kAwkward.n}, std::numeric_limits<float>::quiet_NaN());
  OwnedTensor y_before = copy_of(y);
  grouped_gemm_fp8(y, operands.x(), operands.weights(), operands.offsets);  // beta 0: y is not read
  expect_dequantised_product(y, operands, y_before, 0.0f);
}

TEST(GroupedGemmFp8Cpu, BetaOneAddsTheProduct) {
  Operands operands = testing::fp8_grouped_operands(kAwkward, 2);
  OwnedTensor y = testing::spread_matrix(kAwkward.rows(), kAwkward.n, 3);
  OwnedTensor y_before = copy_of(y);
  grouped_gemm_fp8(y, operands.x(), operands.weights(), operands.offsets, /*beta=*/1.0f);
  expect_dequantised_product(y, operands, y_before, 1.0f);
}

// Every expert's rows are fp8_gemm's result for those rows and that expert's weights, bit for bit.
void expect_dense_fp8_gemm_per_expert(const Problem& problem, float beta, uint64_t seed) {
  Operands operands = testing::fp8_grouped_operands(problem, seed);
  OwnedTensor y = testing::spread_matrix(problem.rows(), problem.n, seed + 7);
  OwnedTensor expected = copy_of(y);
  grouped_gemm_fp8(y, operands.x(), operands.weights(), operands.offsets, beta);
  const int32_t* offsets = operands.offsets.data<int32_t>();
  Fp8ExpertWeights weights = operands.weights();
  for (int64_t e = 0; e < problem.experts(); ++e) {
    if (offsets[e] == offsets[e + 1]) continue;
    Fp8Matrix x_rows{operands.x_values.tensor().slice(offsets[e], offsets[e + 1]),
                     operands.x_scales.tensor().slice(offsets[e], offsets[e + 1]), Fp8Scaling::tile_1x128};
    Fp8Matrix w{weights.values.expert(e), weights.scales.expert(e), Fp8Scaling::block_128x128};
    fp8_gemm(expected.tensor().slice(offsets[e], offsets[e + 1]), x_rows, w, beta);
  }
  EXPECT_EQ(std::memcmp(y.tensor().raw(), expected.tensor().raw(), y.tensor().bytes()), 0)
      << "beta " << beta << ": not fp8_gemm's bits";
}

TEST(GroupedGemmFp8Cpu, EachExpertIsTheDenseFp8GemmBitForBit) {
  expect_dense_fp8_gemm_per_expert(kAwkward, 0.0f, 10);
  expect_dense_fp8_gemm_per_expert(kAwkward, 1.0f, 20);
}

TEST(GroupedGemmFp8Cpu, OneExpertIsTheDenseFp8GemmBitForBit) {
  expect_dense_fp8_gemm_per_expert({{257}, 0, 130, 256, 24}, 0.0f, 30);
  expect_dense_fp8_gemm_per_expert({{1}, 2, 7, 5, 24}, 1.0f, 40);
}

TEST(GroupedGemmFp8Cpu, Bf16OutputIsTheFp32ResultRoundedOnce) {
  Operands operands = testing::fp8_grouped_operands(kAwkward, 50);
  Shape y_shape{kAwkward.rows(), kAwkward.n};
  OwnedTensor y32 = filled(y_shape, 0.0f);
  OwnedTensor y16(y_shape, DType::bf16);
  for (int64_t i = 0; i < y16.numel(); ++i) y16.data<bf16>()[i].bits = 0x7fc0;  // NaN: unrouted rows keep it
  grouped_gemm_fp8(y32, operands.x(), operands.weights(), operands.offsets);
  grouped_gemm_fp8(y16, operands.x(), operands.weights(), operands.offsets);
  int64_t routed_elements = kAwkward.routed_rows() * kAwkward.n, mismatches = 0;
  for (int64_t i = 0; i < y16.numel(); ++i) {
    uint16_t expected = i < routed_elements ? float_to_bf16(y32.data<float>()[i]) : uint16_t{0x7fc0};
    mismatches += y16.data<bf16>()[i].bits != expected;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(GroupedGemmFp8Cpu, NoRoutedRowsLeavesYAlone) {
  Problem problem{{0, 0, 0}, 4, 16, 32, 24};
  Operands operands = testing::fp8_grouped_operands(problem, 60);
  OwnedTensor y = testing::spread_matrix(problem.rows(), problem.n, 61);
  OwnedTensor y_before = copy_of(y);
  grouped_gemm_fp8(y, operands.x(), operands.weights(), operands.offsets);
  EXPECT_EQ(std::memcmp(y.tensor().raw(), y_before.tensor().raw(), y.tensor().bytes()), 0);
}

TEST(GroupedGemmFp8Cpu, RefusesBadArguments) {
  Problem problem{{2, 3}, 1, 16, 32, 24};
  Operands operands = testing::fp8_grouped_operands(problem, 70);
  OwnedTensor y = filled(Shape{problem.rows(), problem.n}, 0.0f);
  Fp8Matrix x = operands.x();
  Fp8ExpertWeights weights = operands.weights();
  EXPECT_THROW(grouped_gemm_fp8(y, x, weights, operands.offsets, 0.5f), Error);  // beta 0 or 1
  OwnedTensor y16(Shape{problem.rows(), problem.n}, DType::bf16);
  EXPECT_THROW(grouped_gemm_fp8(y16, x, weights, operands.offsets, 1.0f), Error);  // bf16 only with beta 0
  Fp8Matrix x_blocks = x;
  x_blocks.scaling = Fp8Scaling::block_128x128;
  EXPECT_THROW(grouped_gemm_fp8(y, x_blocks, weights, operands.offsets), Error);
  Fp8ExpertWeights fewer_scales = weights;
  fewer_scales.scales.experts = 1;
  EXPECT_THROW(grouped_gemm_fp8(y, x, fewer_scales, operands.offsets), Error);
  OwnedTensor too_many_rows = testing::offsets_for({2, 5});  // offsets[E] = 7 > R = 6
  EXPECT_THROW(grouped_gemm_fp8(y, x, weights, too_many_rows), Error);
  OwnedTensor decreasing = testing::offsets_for({2, 3});
  decreasing.data<int32_t>()[1] = 6;
  EXPECT_THROW(grouped_gemm_fp8(y, x, weights, decreasing), Error);
  OwnedTensor wrong_width = filled(Shape{problem.rows(), problem.n + 1}, 0.0f);
  EXPECT_THROW(grouped_gemm_fp8(wrong_width, x, weights, operands.offsets), Error);
}

}  // namespace
}  // namespace hai
