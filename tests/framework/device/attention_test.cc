#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "framework/device/attention.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

struct AttentionSizes {
  int64_t batch, sequence, heads, qk_dim, v_dim;
  Shape qk() const { return {batch, sequence, heads, qk_dim}; }
  Shape v() const { return {batch, sequence, heads, v_dim}; }
  Shape lse() const { return {batch, heads, sequence}; }
};

// Causal softmax attention computed naively in double: returns out [B, S, H, d_v] and lse [B, H, S].
void naive_attention(const AttentionSizes& sizes, const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                     std::vector<double>& out, std::vector<double>& lse) {
  out.assign(sizes.v().numel(), 0.0);
  lse.assign(sizes.lse().numel(), 0.0);
  auto row = [&](int64_t b, int64_t s, int64_t h) { return (b * sizes.sequence + s) * sizes.heads + h; };
  for (int64_t b = 0; b < sizes.batch; ++b) {
    for (int64_t h = 0; h < sizes.heads; ++h) {
      for (int64_t i = 0; i < sizes.sequence; ++i) {
        std::vector<double> scores(i + 1);
        double max_score = -1e300, sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < sizes.qk_dim; ++d) {
            dot += static_cast<double>(q.data<float>()[row(b, i, h) * sizes.qk_dim + d]) *
                   k.data<float>()[row(b, j, h) * sizes.qk_dim + d];
          }
          scores[j] = scale * dot;
          max_score = std::max(max_score, scores[j]);
        }
        for (int64_t j = 0; j <= i; ++j) sum += std::exp(scores[j] - max_score);
        lse[(b * sizes.heads + h) * sizes.sequence + i] = max_score + std::log(sum);
        for (int64_t j = 0; j <= i; ++j) {
          double p = std::exp(scores[j] - max_score) / sum;
          for (int64_t d = 0; d < sizes.v_dim; ++d) {
            out[row(b, i, h) * sizes.v_dim + d] += p * v.data<float>()[row(b, j, h) * sizes.v_dim + d];
          }
        }
      }
    }
  }
}

TEST(Attention, ForwardHandComputed) {
  // B = 1, S = 2, H = 1, d_qk = d_v = 1, scale 1. Row 0 sees only key 0; row 1 has scores 0 and ln 3, so its
  // probabilities are 1/4 and 3/4.
  AttentionSizes sizes{1, 2, 1, 1, 1};
  OwnedTensor q(sizes.qk(), DType::f32), k(sizes.qk(), DType::f32), v(sizes.v(), DType::f32);
  OwnedTensor out(sizes.v(), DType::f32), lse(sizes.lse(), DType::f32);
  q.data<float>()[0] = 2.0f, q.data<float>()[1] = 1.0f;
  k.data<float>()[0] = 0.0f, k.data<float>()[1] = std::log(3.0f);
  v.data<float>()[0] = 4.0f, v.data<float>()[1] = 8.0f;
  attention_forward(out, lse, q, k, v, 1.0f);
  EXPECT_FLOAT_EQ(out.data<float>()[0], 4.0f);
  EXPECT_FLOAT_EQ(out.data<float>()[1], 0.25f * 4.0f + 0.75f * 8.0f);
  EXPECT_FLOAT_EQ(lse.data<float>()[0], 0.0f);
  EXPECT_FLOAT_EQ(lse.data<float>()[1], std::log(4.0f));
}

class AttentionSizesTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(AttentionSizesTest, ForwardMatchesNaiveDouble) {
  AttentionSizes sizes{2, GetParam(), 3, 24, 16};
  OwnedTensor q = testing::random_tensor(sizes.qk(), 1), k = testing::random_tensor(sizes.qk(), 2);
  OwnedTensor v = testing::random_tensor(sizes.v(), 3);
  OwnedTensor out(sizes.v(), DType::f32), lse(sizes.lse(), DType::f32);
  float scale = 1.0f / std::sqrt(24.0f);
  attention_forward(out, lse, q, k, v, scale);
  std::vector<double> expected_out, expected_lse;
  naive_attention(sizes, q, k, v, scale, expected_out, expected_lse);
  for (int64_t i = 0; i < out.numel(); ++i) EXPECT_NEAR(out.data<float>()[i], expected_out[i], 1e-5) << i;
  for (int64_t i = 0; i < lse.numel(); ++i) EXPECT_NEAR(lse.data<float>()[i], expected_lse[i], 1e-5) << i;
}

TEST_P(AttentionSizesTest, BackwardMatchesFiniteDifferences) {
  AttentionSizes sizes{2, GetParam(), 2, 24, 16};
  OwnedTensor q = testing::random_tensor(sizes.qk(), 4), k = testing::random_tensor(sizes.qk(), 5);
  OwnedTensor v = testing::random_tensor(sizes.v(), 6), d_out = testing::random_tensor(sizes.v(), 7);
  OwnedTensor out(sizes.v(), DType::f32), lse(sizes.lse(), DType::f32);
  OwnedTensor d_q(sizes.qk(), DType::f32), d_k(sizes.qk(), DType::f32), d_v(sizes.v(), DType::f32);
  float scale = 1.0f / std::sqrt(24.0f);
  attention_forward(out, lse, q, k, v, scale);
  attention_backward(d_q, d_k, d_v, d_out, q, k, v, out, lse, scale);
  auto loss = [&] {
    attention_forward(out, lse, q, k, v, scale);
    return testing::dot(out, d_out);
  };
  // Every element for the small sizes; every 7th for S = 33 to keep the test fast.
  std::vector<int64_t> qk_indices, v_indices;
  int64_t stride = sizes.sequence > 8 ? 7 : 1;
  for (int64_t i = 0; i < q.numel(); i += stride) qk_indices.push_back(i);
  for (int64_t i = 0; i < v.numel(); i += stride) v_indices.push_back(i);
  testing::check_gradient(q, d_q, loss, 1e-3, 2e-3, 1e-2, qk_indices);
  testing::check_gradient(k, d_k, loss, 1e-3, 2e-3, 1e-2, qk_indices);
  testing::check_gradient(v, d_v, loss, 1e-3, 2e-3, 1e-2, v_indices);
}

INSTANTIATE_TEST_SUITE_P(Sequences, AttentionSizesTest, ::testing::Values(1, 7, 33));

TEST(Attention, BackwardIsCausal) {
  // With d_out nonzero only at position 0, only q[0], k[0], v[0] can receive gradient (causality).
  AttentionSizes sizes{1, 4, 1, 3, 2};
  OwnedTensor q = testing::random_tensor(sizes.qk(), 8), k = testing::random_tensor(sizes.qk(), 9);
  OwnedTensor v = testing::random_tensor(sizes.v(), 10), d_out(sizes.v(), DType::f32);
  OwnedTensor out(sizes.v(), DType::f32), lse(sizes.lse(), DType::f32);
  OwnedTensor d_q(sizes.qk(), DType::f32), d_k(sizes.qk(), DType::f32), d_v(sizes.v(), DType::f32);
  d_out.data<float>()[0] = 1.0f, d_out.data<float>()[1] = -2.0f;
  attention_forward(out, lse, q, k, v, 0.5f);
  attention_backward(d_q, d_k, d_v, d_out, q, k, v, out, lse, 0.5f);
  EXPECT_FLOAT_EQ(d_v.data<float>()[0], 1.0f);  // the single probability at row 0 is exactly 1
  EXPECT_FLOAT_EQ(d_v.data<float>()[1], -2.0f);
  for (int64_t i = 3; i < d_q.numel(); ++i) EXPECT_EQ(d_q.data<float>()[i], 0.0f) << i;
  for (int64_t i = 3; i < d_k.numel(); ++i) EXPECT_EQ(d_k.data<float>()[i], 0.0f) << i;
  for (int64_t i = 2; i < d_v.numel(); ++i) EXPECT_EQ(d_v.data<float>()[i], 0.0f) << i;
}

// The same values as bf16 and as fp32 (already bf16-representable).
struct BothDtypes {
  OwnedTensor f32, bf16;
};
BothDtypes bf16_values(Shape shape, uint64_t seed) {
  OwnedTensor random = testing::random_tensor(shape, seed);
  BothDtypes both{OwnedTensor(shape, DType::f32), OwnedTensor(shape, DType::bf16)};
  for (int64_t i = 0; i < random.numel(); ++i) {
    uint16_t bits = float_to_bf16(random.data<float>()[i]);
    both.bf16.data<bf16>()[i].bits = bits;
    both.f32.data<float>()[i] = bf16_to_float(bits);
  }
  return both;
}

void expect_equal(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.numel(), expected.numel());
  for (int64_t i = 0; i < actual.numel(); ++i) EXPECT_EQ(actual.data<float>()[i], expected.data<float>()[i]) << i;
}

TEST(Attention, Bf16InputsEqualTheFp32OpOnTheSameValues) {
  AttentionSizes sizes{2, 9, 2, 24, 16};
  BothDtypes q = bf16_values(sizes.qk(), 11), k = bf16_values(sizes.qk(), 12), v = bf16_values(sizes.v(), 13);
  OwnedTensor d_out = testing::random_tensor(sizes.v(), 14);
  float scale = 1.0f / std::sqrt(24.0f);
  OwnedTensor out(sizes.v(), DType::f32), lse(sizes.lse(), DType::f32);
  OwnedTensor out_bf16(sizes.v(), DType::f32), lse_bf16(sizes.lse(), DType::f32);
  attention_forward(out, lse, q.f32, k.f32, v.f32, scale);
  attention_forward(out_bf16, lse_bf16, q.bf16, k.bf16, v.bf16, scale);
  expect_equal(out_bf16, out);
  expect_equal(lse_bf16, lse);

  OwnedTensor d_q(sizes.qk(), DType::f32), d_k(sizes.qk(), DType::f32), d_v(sizes.v(), DType::f32);
  OwnedTensor d_q_bf16(sizes.qk(), DType::f32), d_k_bf16(sizes.qk(), DType::f32), d_v_bf16(sizes.v(), DType::f32);
  attention_backward(d_q, d_k, d_v, d_out, q.f32, k.f32, v.f32, out, lse, scale);
  attention_backward(d_q_bf16, d_k_bf16, d_v_bf16, d_out, q.bf16, k.bf16, v.bf16, out, lse, scale);
  expect_equal(d_q_bf16, d_q);
  expect_equal(d_k_bf16, d_k);
  expect_equal(d_v_bf16, d_v);
}

// bf16 out is the fp32 out rounded once; a bf16 out and d_out in the backward are read as their fp32 values.
TEST(Attention, Bf16OutAndDOutAreTheRoundedValues) {
  AttentionSizes sizes{2, 9, 2, 24, 16};
  BothDtypes q = bf16_values(sizes.qk(), 21), k = bf16_values(sizes.qk(), 22), v = bf16_values(sizes.v(), 23);
  BothDtypes d_out = bf16_values(sizes.v(), 24);
  float scale = 1.0f / std::sqrt(24.0f);
  OwnedTensor out(sizes.v(), DType::f32), out_bf16(sizes.v(), DType::bf16), lse(sizes.lse(), DType::f32);
  attention_forward(out, lse, q.bf16, k.bf16, v.bf16, scale);
  attention_forward(out_bf16, lse, q.bf16, k.bf16, v.bf16, scale);
  OwnedTensor out_rounded(sizes.v(), DType::f32);  // out_bf16's values
  for (int64_t i = 0; i < out.numel(); ++i) {
    uint16_t bits = out_bf16.data<bf16>()[i].bits;
    ASSERT_EQ(bits, float_to_bf16(out.data<float>()[i])) << i;
    out_rounded.data<float>()[i] = bf16_to_float(bits);
  }
  OwnedTensor d_q(sizes.qk(), DType::f32), d_k(sizes.qk(), DType::f32), d_v(sizes.v(), DType::f32);
  OwnedTensor d_q_bf16(sizes.qk(), DType::f32), d_k_bf16(sizes.qk(), DType::f32), d_v_bf16(sizes.v(), DType::f32);
  attention_backward(d_q, d_k, d_v, d_out.f32, q.bf16, k.bf16, v.bf16, out_rounded, lse, scale);
  attention_backward(d_q_bf16, d_k_bf16, d_v_bf16, d_out.bf16, q.bf16, k.bf16, v.bf16, out_bf16, lse, scale);
  expect_equal(d_q_bf16, d_q);
  expect_equal(d_k_bf16, d_k);
  expect_equal(d_v_bf16, d_v);
}

TEST(Attention, RejectsMixedOrUnsupportedDtypes) {
  Shape shape{1, 2, 1, 8};
  OwnedTensor q(shape, DType::bf16), k(shape, DType::f32), v(shape, DType::bf16);
  OwnedTensor out(shape, DType::f32), lse(Shape{1, 1, 2}, DType::f32), out_bf16(shape, DType::bf16);
  EXPECT_THROW(attention_forward(out, lse, q, k, v, 1.0f), Error);  // k differs
  OwnedTensor q32(shape, DType::f32);
  EXPECT_THROW(attention_forward(out_bf16, lse, q32, q32, q32, 1.0f), Error);  // bf16 out needs bf16 inputs
  OwnedTensor q16(shape, DType::f16);
  EXPECT_THROW(attention_forward(out, lse, q16, q16, q16, 1.0f), Error);
}

TEST(Attention, RejectsMismatchedShapes) {
  OwnedTensor q(Shape{1, 2, 1, 4}, DType::f32), k(Shape{1, 2, 1, 3}, DType::f32), v(Shape{1, 2, 1, 2}, DType::f32);
  OwnedTensor out(Shape{1, 2, 1, 2}, DType::f32), lse(Shape{1, 1, 2}, DType::f32);
  EXPECT_THROW(attention_forward(out, lse, q, k, v, 1.0f), Error);
  EXPECT_THROW(attention_forward(out, lse, q, q, q, 1.0f), Error);
}

}  // namespace
}  // namespace hai
