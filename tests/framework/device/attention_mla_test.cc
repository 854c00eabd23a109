#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "framework/device/attention.h"
#include "framework/device/attention_mla.h"
#include "framework/device/cast.h"
#include "framework/device/rope_table.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// B = 2, S = 5, H = 3, d_qk = 4 + 8 (N = 4 unrotated columns, R = 8 rotated), d_v = 6.
constexpr int64_t kBatch = 2, kSequence = 5, kHeads = 3, kNope = 4, kRope = 8, kValue = 6;
constexpr int64_t kQk = kNope + kRope;

Shape per_head(int64_t width) { return {kBatch, kSequence, kHeads, width}; }

OwnedTensor in_dtype(const Tensor& x, DType dtype) {
  OwnedTensor converted(x.shape(), dtype);
  cast_tensor(converted, x);
  return converted;
}

// k [B, S, H, d_qk] and v [B, S, H, d_v] of MLA's kv [B, S, H, N + d_v] and k_rope [B, S, R], assembled by hand.
void assemble(const Tensor& k, const Tensor& v, const Tensor& kv, const Tensor& k_rope) {
  for (int64_t row = 0; row < kBatch * kSequence * kHeads; ++row) {
    const float* kv_row = kv.data<float>() + row * (kNope + kValue);
    const float* rope_row = k_rope.data<float>() + row / kHeads * kRope;
    for (int64_t c = 0; c < kNope; ++c) k.data<float>()[row * kQk + c] = kv_row[c];
    for (int64_t c = 0; c < kRope; ++c) k.data<float>()[row * kQk + kNope + c] = rope_row[c];
    for (int64_t c = 0; c < kValue; ++c) v.data<float>()[row * kValue + c] = kv_row[kNope + c];
  }
}

// MLA's attention operands in `dtype` (and as fp32 k and v), out and lse from the forward op, a RoPE table of 16
// positions, and positions that differ between the two sequences.
struct MlaOperands {
  explicit MlaOperands(DType dtype)
      : q(in_dtype(testing::random_tensor(per_head(kQk), 1), dtype)),
        kv(in_dtype(testing::random_tensor(per_head(kNope + kValue), 2), dtype)),
        k_rope(in_dtype(testing::random_tensor(Shape{kBatch, kSequence, kRope}, 3), dtype)),
        k(per_head(kQk), DType::f32),
        v(per_head(kValue), DType::f32),
        d_out(testing::random_tensor(per_head(kValue), 4)),
        out(per_head(kValue), DType::f32),
        lse(Shape{kBatch, kHeads, kSequence}, DType::f32),
        positions(Shape{kBatch * kSequence}, DType::i32),
        cos(Shape{16, kRope / 2}, DType::f32),
        sin(Shape{16, kRope / 2}, DType::f32) {
    assemble(k, v, in_dtype(kv, DType::f32), in_dtype(k_rope, DType::f32));
    attention_forward_mla(out, lse, q, kv, k_rope, kScale);
    fill_rope_table(table(), {.rope_dim = kRope, .max_positions = 16});
    for (int64_t t = 0; t < kBatch * kSequence; ++t) positions.data<int32_t>()[t] = static_cast<int32_t>(3 * t % 16);
  }
  RopeTable table() const { return {cos, sin}; }

  // MLA's gradients in these dtypes.
  MlaAttentionGradients backward(DType d_q_dtype, DType d_kv_dtype) {
    d_q = OwnedTensor(per_head(kQk), d_q_dtype);
    d_kv = OwnedTensor(per_head(kNope + kValue), d_kv_dtype);
    d_k_rope = OwnedTensor(per_head(kRope), DType::f32);
    MlaAttentionGradients gradients{d_q, d_kv, d_k_rope};
    attention_backward_mla(gradients, d_out, q, kv, k_rope, out, lse, kScale, positions, table());
    return gradients;
  }

  static constexpr float kScale = 0.3f;
  OwnedTensor q, kv, k_rope, k, v, d_out, out, lse, positions, cos, sin;
  OwnedTensor d_q, d_kv, d_k_rope;
};

TEST(AttentionMla, ForwardIsAttentionOnTheAssembledKeysAndValues) {
  MlaOperands operands(DType::f32);
  OwnedTensor out(per_head(kValue), DType::f32), lse(Shape{kBatch, kHeads, kSequence}, DType::f32);
  attention_forward(out, lse, operands.q, operands.k, operands.v, MlaOperands::kScale);
  EXPECT_TRUE(testing::same_bytes(out, operands.out));
  EXPECT_TRUE(testing::same_bytes(lse, operands.lse));
}

TEST(AttentionMla, Fp32GradientsAreAttentionBackwardsLaidOut) {
  MlaOperands operands(DType::f32);
  OwnedTensor d_q(per_head(kQk), DType::f32), d_k(per_head(kQk), DType::f32), d_v(per_head(kValue), DType::f32);
  attention_backward(d_q, d_k, d_v, operands.d_out, operands.q, operands.k, operands.v, operands.out, operands.lse,
                     MlaOperands::kScale);  // on the assembled k and v
  MlaAttentionGradients mla = operands.backward(DType::f32, DType::f32);
  const float* cos = operands.cos.data<float>();
  const float* sin = operands.sin.data<float>();
  for (int64_t row = 0; row < kBatch * kSequence * kHeads; ++row) {
    int32_t position = operands.positions.data<int32_t>()[row / kHeads];
    const float* q_row = d_q.data<float>() + row * kQk;
    const float* k_row = d_k.data<float>() + row * kQk;
    const float* mla_q_row = mla.d_q.data<float>() + row * kQk;
    const float* kv_row = mla.d_kv.data<float>() + row * (kNope + kValue);
    for (int64_t c = 0; c < kNope; ++c) {
      EXPECT_EQ(mla_q_row[c], q_row[c]);
      EXPECT_EQ(kv_row[c], k_row[c]);
    }
    for (int64_t c = 0; c < kValue; ++c) EXPECT_EQ(kv_row[kNope + c], d_v.data<float>()[row * kValue + c]);
    for (int64_t c = 0; c < kRope; ++c) EXPECT_EQ(mla.d_k_rope.data<float>()[row * kRope + c], k_row[kNope + c]);
    // rotated back: the transposed rotation of each pair (x, y) by angle(position, i)
    for (int64_t i = 0; i < kRope / 2; ++i) {
      double c = cos[position * kRope / 2 + i], s = sin[position * kRope / 2 + i];
      double x = q_row[kNope + 2 * i], y = q_row[kNope + 2 * i + 1];
      EXPECT_NEAR(mla_q_row[kNope + 2 * i], x * c + y * s, 1e-6 * (std::abs(x) + std::abs(y)));
      EXPECT_NEAR(mla_q_row[kNope + 2 * i + 1], y * c - x * s, 1e-6 * (std::abs(x) + std::abs(y)));
    }
  }
}

TEST(AttentionMla, Bf16GradientsAreTheFp32OnesRoundedOnce) {
  MlaOperands operands(DType::bf16);
  MlaAttentionGradients wide = operands.backward(DType::f32, DType::f32);
  OwnedTensor wide_d_q = in_dtype(wide.d_q, DType::bf16), wide_d_kv = in_dtype(wide.d_kv, DType::bf16);
  OwnedTensor wide_d_k_rope = in_dtype(wide.d_k_rope, DType::f32);
  MlaAttentionGradients narrow = operands.backward(DType::bf16, DType::bf16);
  EXPECT_TRUE(testing::same_bytes(narrow.d_q, wide_d_q));
  EXPECT_TRUE(testing::same_bytes(narrow.d_kv, wide_d_kv));
  EXPECT_TRUE(testing::same_bytes(narrow.d_k_rope, wide_d_k_rope));
}

TEST(AttentionMla, RejectsMisshapenOperands) {
  MlaOperands operands(DType::f32);
  OwnedTensor d_q(per_head(kQk), DType::f32), d_k_rope(per_head(kRope), DType::f32);
  OwnedTensor narrow_kv(per_head(kNope + kValue - 2), DType::f32), d_kv(per_head(kNope + kValue), DType::f32);
  auto run = [&](const Tensor& kv, const Tensor& rope, const Tensor& positions) {
    attention_backward_mla({d_q, kv, rope}, operands.d_out, operands.q, operands.kv, operands.k_rope, operands.out,
                           operands.lse, MlaOperands::kScale, positions, operands.table());
  };
  EXPECT_THROW(run(narrow_kv, d_k_rope, operands.positions), std::exception);
  EXPECT_THROW(run(d_kv, d_kv, operands.positions), std::exception);
  OwnedTensor short_positions(Shape{kSequence}, DType::i32);
  EXPECT_THROW(run(d_kv, d_k_rope, short_positions), std::exception);
  EXPECT_NO_THROW(run(d_kv, d_k_rope, operands.positions));
  OwnedTensor per_head_rope(per_head(kRope), DType::f32);  // k_rope is one row a token, not a head
  EXPECT_THROW(attention_forward_mla(operands.out, operands.lse, operands.q, operands.kv, per_head_rope,
                                     MlaOperands::kScale),
               std::exception);
}

}  // namespace
}  // namespace hai
