// The FP8 expert weight gradient's CPU ops (framework/device/grouped_gemm_fp8_weight_grad.h): the padded offsets,
// the token-padded quantisation against its definition (quantize_128x1 of each expert's rows on their own), and the
// GEMM against the dequantised product and against the unquantised gradient.

#include "framework/device/grouped_gemm_fp8_weight_grad.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "framework/device/cast.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/gemm.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

OwnedTensor offsets_from_counts(const std::vector<int32_t>& counts) {
  OwnedTensor offsets(Shape{static_cast<int64_t>(counts.size()) + 1}, DType::i32);
  offsets.data<int32_t>()[0] = 0;
  for (size_t e = 0; e < counts.size(); ++e) offsets.data<int32_t>()[e + 1] = offsets.data<int32_t>()[e] + counts[e];
  return offsets;
}

OwnedTensor padded_offsets(const Tensor& offsets) {
  OwnedTensor padded(offsets.shape(), DType::i32);
  pad_expert_offsets(padded, offsets);
  return padded;
}

struct TokenBuffers {
  OwnedTensor values, scales;
  Fp8ExpertTokens tokens() const { return {values, scales}; }
};

TokenBuffers quantized_tokens(const Tensor& x, const Tensor& offsets, const Tensor& padded, int64_t padded_rows,
                              bool pow2_scales = false) {
  TokenBuffers buffers{OwnedTensor(Shape{x.size(1), padded_rows}, DType::e4m3),
                       OwnedTensor(Shape{padded_rows / kFp8TileSize, x.size(1)}, DType::f32)};
  quantize_expert_tokens(buffers.tokens(), x, offsets, padded, pow2_scales);
  return buffers;
}

TEST(Fp8ExpertTokens, PaddedOffsetsRoundEveryExpertUpTo128) {
  OwnedTensor offsets = offsets_from_counts({0, 1, 128, 129, 0, 300});
  OwnedTensor padded = padded_offsets(offsets);
  std::vector<int32_t> expected{0, 0, 128, 256, 512, 512, 896};
  EXPECT_EQ(std::vector<int32_t>(padded.data<int32_t>(), padded.data<int32_t>() + 7), expected);
  EXPECT_EQ(padded_expert_rows(558, 6), 1408);  // 558 + 6 * 127 = 1320, rounded up
  EXPECT_GE(padded_expert_rows(558, 6), 896);
  EXPECT_EQ(padded_expert_rows(0, 0), 0);
}

// Every expert's rows quantised on their own (quantize_128x1: 128-row tiles from the expert's first row), written
// at the expert's padded columns; zeros and the scale of amax 0 everywhere else.
void expect_definition(const TokenBuffers& buffers, const Tensor& x, const std::vector<int32_t>& counts,
                       bool pow2_scales) {
  const int64_t columns = x.size(1), padded_rows = buffers.values.tensor().size(1);
  std::vector<uint8_t> values(static_cast<size_t>(columns * padded_rows), 0);  // [C, P]
  float empty_scale = fp8_scale_from_amax(0.0f, pow2_scales);
  std::vector<float> scales(static_cast<size_t>(padded_rows / kFp8TileSize * columns), empty_scale);  // [P/128, C]
  int64_t row = 0, padded_row = 0;
  for (int32_t count : counts) {
    if (count > 0) {
      OwnedTensor widened(Shape{count, columns}, DType::f32);
      cast_tensor(widened, x.slice(row, row + count));
      OwnedTensor q(Shape{count, columns}, DType::e4m3);
      OwnedTensor tile_scales(Shape{(count + 127) / 128, columns}, DType::f32);
      quantize_128x1(q, tile_scales, widened, pow2_scales);
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t c = 0; c < columns; ++c) {
          values[static_cast<size_t>(c * padded_rows + padded_row + i)] =
              static_cast<const uint8_t*>(q.tensor().raw())[i * columns + c];
        }
      }
      std::memcpy(&scales[static_cast<size_t>(padded_row / kFp8TileSize * columns)], tile_scales.data<float>(),
                  tile_scales.tensor().bytes());
    }
    row += count;
    padded_row += (count + 127) / 128 * 128;
  }
  EXPECT_EQ(std::memcmp(buffers.values.tensor().raw(), values.data(), values.size()), 0);
  EXPECT_EQ(std::memcmp(buffers.scales.tensor().raw(), scales.data(), scales.size() * sizeof(float)), 0);
}

TEST(Fp8ExpertTokens, EachExpertIsQuantisedInItsOwn128RowTiles) {
  std::vector<int32_t> counts{0, 1, 127, 128, 129, 0, 300, 0};
  OwnedTensor offsets = offsets_from_counts(counts);
  OwnedTensor padded = padded_offsets(offsets);
  // 685 routed rows and 11 rows past offsets[E] that must be ignored; C = 200 (not a multiple of 128).
  OwnedTensor x = testing::random_tensor(Shape{696, 200}, 5, 3.0f);
  for (int64_t i = 685 * 200; i < x.numel(); ++i) x.data<float>()[i] = 1e6f;
  int64_t padded_rows = padded_expert_rows(696, 8);
  for (bool pow2_scales : {false, true}) {
    TokenBuffers buffers = quantized_tokens(x, offsets, padded, padded_rows, pow2_scales);
    expect_definition(buffers, x, counts, pow2_scales);
  }
}

TEST(Fp8ExpertTokens, Bf16RowsAreQuantisedAsTheirExactWidening) {
  std::vector<int32_t> counts{3, 130, 0, 64};
  OwnedTensor offsets = offsets_from_counts(counts);
  OwnedTensor padded = padded_offsets(offsets);
  OwnedTensor x = testing::random_tensor(Shape{197, 96}, 6);
  OwnedTensor x_bf16(x.shape(), DType::bf16);
  cast_tensor(x_bf16, x);
  int64_t padded_rows = padded_expert_rows(197, 4);
  TokenBuffers from_bf16 = quantized_tokens(x_bf16, offsets, padded, padded_rows);
  expect_definition(from_bf16, x_bf16, counts, false);
}

// With every expert's rows a multiple of 128 the padding is empty: the first R columns are quantize_128x1_transposed
// of x (scales transposed), the rest (P is padded_expert_rows' bound) zeros.
TEST(Fp8ExpertTokens, AlignedExpertsGiveThe128x1TransposedQuantisation) {
  OwnedTensor offsets = offsets_from_counts({128, 0, 256});
  OwnedTensor padded = padded_offsets(offsets);
  OwnedTensor x = testing::random_tensor(Shape{384, 160}, 7);
  int64_t padded_rows = padded_expert_rows(384, 3);
  ASSERT_EQ(padded_rows, 768);
  TokenBuffers buffers = quantized_tokens(x, offsets, padded, padded_rows);
  OwnedTensor q_t(Shape{160, 384}, DType::e4m3), scales_t(Shape{160, 3}, DType::f32);
  quantize_128x1_transposed(q_t, scales_t, x);
  const auto* values = static_cast<const uint8_t*>(buffers.values.tensor().raw());  // [160, 768]
  const auto* expected = static_cast<const uint8_t*>(q_t.tensor().raw());           // [160, 384]
  for (int64_t c = 0; c < 160; ++c) {
    ASSERT_EQ(std::memcmp(values + c * 768, expected + c * 384, 384), 0) << "column " << c;
    for (int64_t p = 384; p < 768; ++p) ASSERT_EQ(values[c * 768 + p], 0) << c << ", " << p;
  }
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t c = 0; c < 160; ++c) {
      EXPECT_EQ(buffers.scales.data<float>()[b * 160 + c], scales_t.data<float>()[c * 3 + b]) << b << ", " << c;
    }
  }
}

// On the CPU quantize_rows_and_expert_tokens is quantize_1x128 and quantize_expert_tokens, fp32 and bf16, with rows
// past offsets[E] (quantised as rows, ignored as tokens) and C not a multiple of 128.
TEST(Fp8ExpertTokens, RowsAndTokensAreTheTwoQuantisations) {
  std::vector<int32_t> counts{0, 1, 127, 130, 0};
  OwnedTensor offsets = offsets_from_counts(counts);
  OwnedTensor padded = padded_offsets(offsets);
  OwnedTensor x = testing::random_tensor(Shape{270, 200}, 13, 3.0f);  // [R, C]: 12 rows past offsets[E]
  OwnedTensor x_bf16(x.shape(), DType::bf16);
  cast_tensor(x_bf16, x);
  int64_t padded_rows = padded_expert_rows(270, 5);
  for (const Tensor& input : {x.tensor(), x_bf16.tensor()}) {
    for (bool pow2_scales : {false, true}) {
      OwnedTensor q(Shape{270, 200}, DType::e4m3), scales(Shape{270, 2}, DType::f32);
      TokenBuffers tokens{OwnedTensor(Shape{200, padded_rows}, DType::e4m3),
                          OwnedTensor(Shape{padded_rows / kFp8TileSize, 200}, DType::f32)};
      quantize_rows_and_expert_tokens(q, scales, tokens.tokens(), input, offsets, padded, pow2_scales);
      OwnedTensor q_expected(q.shape(), DType::e4m3), scales_expected(scales.shape(), DType::f32);
      quantize_1x128(q_expected, scales_expected, input, pow2_scales);
      TokenBuffers expected = quantized_tokens(input, offsets, padded, padded_rows, pow2_scales);
      EXPECT_TRUE(testing::same_bytes(q, q_expected)) << dtype_name(input.dtype()) << " pow2 " << pow2_scales;
      EXPECT_TRUE(testing::same_bytes(scales, scales_expected)) << dtype_name(input.dtype()) << " pow2 " << pow2_scales;
      EXPECT_TRUE(testing::same_bytes(tokens.values, expected.values)) << dtype_name(input.dtype());
      EXPECT_TRUE(testing::same_bytes(tokens.scales, expected.scales)) << dtype_name(input.dtype());
    }
  }
}

TEST(Fp8ExpertTokens, TooFewPaddedColumnsAreRejected) {
  OwnedTensor offsets = offsets_from_counts({1, 1});
  OwnedTensor padded = padded_offsets(offsets);
  OwnedTensor x = testing::random_tensor(Shape{2, 16}, 8);
  EXPECT_THROW(quantized_tokens(x, offsets, padded, 128), Error);  // padded_expert_rows(2, 2) is 256
}

// The weight gradients of E experts as one ExpertWeights over a buffer (stride one gradient).
struct Gradients {
  OwnedTensor buffer;
  ExpertWeights weights;
  Gradients(int64_t experts, int64_t n, int64_t k, float fill)
      : buffer(Shape{experts, n, k}, DType::f32),
        weights{.first = Tensor(buffer.tensor().raw(), Shape{n, k}, DType::f32, Device::cpu()),
                .expert_stride = n * k,
                .experts = experts} {
    std::fill_n(buffer.data<float>(), buffer.numel(), fill);
  }
};

// [rows, C] fp32 <- the tokens' dequantised values of rows [begin, begin + rows) of the padded columns.
OwnedTensor dequantized_rows(const TokenBuffers& buffers, int64_t begin, int64_t rows) {
  const int64_t columns = buffers.values.tensor().size(0), padded_rows = buffers.values.tensor().size(1);
  OwnedTensor values(Shape{rows, columns}, DType::f32);
  const auto* bytes = static_cast<const uint8_t*>(buffers.values.tensor().raw());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t c = 0; c < columns; ++c) {
      float scale = buffers.scales.data<float>()[(begin + i) / kFp8TileSize * columns + c];
      values.data<float>()[i * columns + c] = e4m3_to_float(bytes[c * padded_rows + begin + i]) * scale;
    }
  }
  return values;
}

struct WeightGradProblem {
  std::vector<int32_t> counts;
  int64_t n, k;
};

TEST(GroupedGemmFp8WeightGrad, IsTheDequantisedProductPerExpert) {
  WeightGradProblem problem{{0, 1, 129, 0, 200, 64}, 40, 72};
  OwnedTensor offsets = offsets_from_counts(problem.counts);
  OwnedTensor padded = padded_offsets(offsets);
  int64_t rows = offsets.data<int32_t>()[problem.counts.size()], experts = static_cast<int64_t>(problem.counts.size());
  int64_t padded_rows = padded_expert_rows(rows, experts);
  OwnedTensor d_y = testing::random_tensor(Shape{rows, problem.n}, 9);
  OwnedTensor x = testing::random_tensor(Shape{rows, problem.k}, 10, 4.0f);
  TokenBuffers d_y_tokens = quantized_tokens(d_y, offsets, padded, padded_rows);
  TokenBuffers x_tokens = quantized_tokens(x, offsets, padded, padded_rows);
  for (float beta : {0.0f, 1.0f}) {
    Gradients grad(experts, problem.n, problem.k, 0.5f);
    grouped_gemm_fp8_weight_grad(grad.weights, d_y_tokens.tokens(), x_tokens.tokens(), padded, beta);
    for (int64_t e = 0; e < experts; ++e) {
      int32_t begin = padded.data<int32_t>()[e], count = problem.counts[static_cast<size_t>(e)];
      OwnedTensor expected(Shape{problem.n, problem.k}, DType::f32);
      std::fill_n(expected.data<float>(), expected.numel(), 0.5f);
      if (count > 0) {
        // The padding adds exact zeros, so the expert's own rows give the same sums.
        gemm(expected, dequantized_rows(d_y_tokens, begin, count), dequantized_rows(x_tokens, begin, count),
             {.transpose_a = true, .beta = beta});
      } else if (beta == 0.0f) {
        std::fill_n(expected.data<float>(), expected.numel(), 0.0f);
      }
      EXPECT_TRUE(testing::same_bytes(grad.weights.expert(e), expected)) << "expert " << e << " beta " << beta;
    }
  }
}

// Against the gradient of the unquantised operands: each e4m3 value is within 2^-4 of its input, so a sum of
// 64..300 products of random signs is within a few percent of the exact one, relative to its sum of |products|.
TEST(GroupedGemmFp8WeightGrad, IsCloseToTheUnquantisedGradient) {
  WeightGradProblem problem{{64, 300, 129}, 128, 96};
  OwnedTensor offsets = offsets_from_counts(problem.counts);
  OwnedTensor padded = padded_offsets(offsets);
  int64_t rows = 493, experts = 3;
  OwnedTensor d_y = testing::random_tensor(Shape{rows, problem.n}, 11, 1e-3f);
  OwnedTensor x = testing::random_tensor(Shape{rows, problem.k}, 12, 30.0f);
  int64_t padded_rows = padded_expert_rows(rows, experts);
  Gradients grad(experts, problem.n, problem.k, 0.0f);
  grouped_gemm_fp8_weight_grad(grad.weights, quantized_tokens(d_y, offsets, padded, padded_rows).tokens(),
                               quantized_tokens(x, offsets, padded, padded_rows).tokens(), padded);
  int64_t row = 0;
  double worst = 0;
  for (int64_t e = 0; e < experts; ++e) {
    int32_t count = problem.counts[static_cast<size_t>(e)];
    const float* gradient = grad.weights.expert(e).data<float>();
    for (int64_t n = 0; n < problem.n; ++n) {
      for (int64_t k = 0; k < problem.k; ++k) {
        double exact = 0, magnitude = 0;
        for (int64_t r = row; r < row + count; ++r) {
          double product =
              static_cast<double>(d_y.data<float>()[r * problem.n + n]) * x.data<float>()[r * problem.k + k];
          exact += product;
          magnitude += std::fabs(product);
        }
        worst = std::max(worst, std::fabs(gradient[n * problem.k + k] - exact) / magnitude);
      }
    }
    row += count;
  }
  EXPECT_LT(worst, 0.04);
  EXPECT_GT(worst, 1e-4);  // quantised, not exact
}

}  // namespace
}  // namespace hai
