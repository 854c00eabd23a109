#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "framework/device/cast.h"
#include "framework/device/token_permutation.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

std::vector<int32_t> values_of(const Tensor& tensor) {
  return {tensor.data<int32_t>(), tensor.data<int32_t>() + tensor.numel()};
}

// 3 tokens, K = 2, 4 experts (expert 3 gets nothing). Assignments a = t * K + k choose experts
// [2, 0 | 0, 1 | 2, 0]; sorted stably by expert: expert 0 <- a1, a2, a5; expert 1 <- a3; expert 2 <- a0, a4.
OwnedTensor example_topk() {
  OwnedTensor topk(Shape{3, 2}, DType::i32);
  int32_t experts[6] = {2, 0, 0, 1, 2, 0};
  std::copy(experts, experts + 6, topk.data<int32_t>());
  return topk;
}

TEST(RoutingPlan, StableSortByExpert) {
  OwnedRoutingPlan plan(3, 2, 4);
  build_routing_plan(plan, example_topk());
  EXPECT_EQ(values_of(plan.plan().sources), (std::vector<int32_t>{1, 2, 5, 3, 0, 4}));
  EXPECT_EQ(values_of(plan.plan().positions), (std::vector<int32_t>{4, 0, 1, 3, 5, 2}));
  EXPECT_EQ(values_of(plan.plan().expert_offsets), (std::vector<int32_t>{0, 3, 4, 6, 6}));
}

TEST(RoutingPlan, RejectsExpertOutsideRange) {
  OwnedRoutingPlan plan(3, 2, 2);  // expert 2 does not exist
  EXPECT_THROW(build_routing_plan(plan, example_topk()), Error);
}

TEST(TokenPermutation, PermuteGathersTokenRows) {
  OwnedRoutingPlan plan(3, 2, 4);
  build_routing_plan(plan, example_topk());
  OwnedTensor x(Shape{3, 2}, DType::f32), x_sorted(Shape{6, 2}, DType::f32);
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = static_cast<float>(10 * (i / 2) + i % 2);  // row t = [10t, 10t+1]
  permute_tokens(x_sorted, x, plan);
  // sorted rows hold the tokens of assignments 1, 2, 5, 3, 0, 4 = tokens 0, 1, 2, 1, 0, 2
  std::vector<float> expected = {0, 1, 10, 11, 20, 21, 10, 11, 0, 1, 20, 21};
  EXPECT_EQ(std::vector<float>(x_sorted.data<float>(), x_sorted.data<float>() + 12), expected);
}

// e4m3 rows (the FP8 experts' input and its scales' rows are fp32) are copied as bytes: odd widths too.
TEST(TokenPermutation, PermuteCopiesE4m3Rows) {
  OwnedRoutingPlan plan(3, 2, 4);
  build_routing_plan(plan, example_topk());
  OwnedTensor x(Shape{3, 3}, DType::e4m3), x_sorted(Shape{6, 3}, DType::e4m3);
  for (int i = 0; i < 9; ++i) x.data<e4m3>()[i].bits = static_cast<uint8_t>(16 * (i / 3) + i % 3);
  permute_tokens(x_sorted, x, plan);
  // the sorted rows hold tokens 0, 1, 2, 1, 0, 2 (PermuteGathersTokenRows)
  for (int row = 0; row < 6; ++row) {
    int token = std::vector<int>{0, 1, 2, 1, 0, 2}[row];
    for (int c = 0; c < 3; ++c) EXPECT_EQ(x_sorted.data<e4m3>()[row * 3 + c].bits, 16 * token + c) << row;
  }
}

TEST(TokenPermutation, UnpermuteCombinesWeightedRows) {
  OwnedRoutingPlan plan(3, 2, 4);
  build_routing_plan(plan, example_topk());
  OwnedTensor y_sorted(Shape{6, 1}, DType::f32), weights(Shape{3, 2}, DType::f32), out(Shape{3, 1}, DType::f32);
  for (int p = 0; p < 6; ++p) y_sorted.data<float>()[p] = static_cast<float>(p + 1);  // sorted row p holds p + 1
  float w[6] = {0.5f, 0.25f, 2.0f, 4.0f, 1.0f, 3.0f};
  std::copy(w, w + 6, weights.data<float>());
  unpermute_tokens(out, y_sorted, weights, plan);
  // token t sums w[t, k] * (positions[t, k] + 1) with positions [4, 0 | 1, 3 | 5, 2]
  EXPECT_FLOAT_EQ(out.data<float>()[0], 0.5f * 5 + 0.25f * 1);
  EXPECT_FLOAT_EQ(out.data<float>()[1], 2.0f * 2 + 4.0f * 4);
  EXPECT_FLOAT_EQ(out.data<float>()[2], 1.0f * 6 + 3.0f * 3);
}

// With an addend (the MoE layer's residual) each token's sum starts from its row: the same weighted rows as
// UnpermuteCombinesWeightedRows on top of it. out's old values (NaN) are not read.
TEST(TokenPermutation, UnpermuteAddsTheWeightedRowsToTheAddend) {
  OwnedRoutingPlan plan(3, 2, 4);
  build_routing_plan(plan, example_topk());
  OwnedTensor y_sorted(Shape{6, 1}, DType::f32), weights(Shape{3, 2}, DType::f32);
  for (int p = 0; p < 6; ++p) y_sorted.data<float>()[p] = static_cast<float>(p + 1);  // sorted row p holds p + 1
  float w[6] = {0.5f, 0.25f, 2.0f, 4.0f, 1.0f, 3.0f};
  std::copy(w, w + 6, weights.data<float>());
  OwnedTensor addend = testing::tensor_of(Shape{3, 1}, {100.0f, -20.0f, 0.5f});
  OwnedTensor out = testing::tensor_of(Shape{3, 1}, {NAN, NAN, NAN});
  unpermute_tokens(out, y_sorted, weights, plan, addend);
  EXPECT_EQ(out.data<float>()[0], 102.75f);  // 100 + 0.5 * 5 + 0.25 * 1
  EXPECT_EQ(out.data<float>()[1], 0.0f);     // -20 + 2 * 2 + 4 * 4
  EXPECT_EQ(out.data<float>()[2], 15.5f);    // 0.5 + 1 * 6 + 3 * 3
  EXPECT_EQ(addend.data<float>()[0], 100.0f);  // read only
}

// The fp32 order of token_permutation.h: the addend first, then each expert's term in k order, one rounding each.
// From 2^24 (where fp32 steps by 2) adding 1 rounds back to 2^24 (ties to even), twice, whereas the terms summed
// first would give 2^24 + 2; from -2^24 the sums fall below 2^24 in magnitude, where the steps are 1.
TEST(TokenPermutation, UnpermuteSumsFromTheAddendInKOrder) {
  OwnedRoutingPlan plan(3, 2, 4);
  build_routing_plan(plan, example_topk());
  OwnedTensor y_sorted = testing::tensor_of(Shape{6, 1}, {1, 1, 1, 1, 1, 1});
  OwnedTensor weights = testing::tensor_of(Shape{3, 2}, {1, 1, 1, 1, 1, 1});
  OwnedTensor addend = testing::tensor_of(Shape{3, 1}, {16777216.0f, -16777216.0f, 0.5f});
  OwnedTensor out(Shape{3, 1}, DType::f32);
  unpermute_tokens(out, y_sorted, weights, plan, addend);
  EXPECT_EQ(out.data<float>()[0], 16777216.0f);
  EXPECT_EQ(out.data<float>()[1], -16777214.0f);
  EXPECT_EQ(out.data<float>()[2], 2.5f);
}

// The addend is [T, D] fp32 in memory apart from out.
TEST(TokenPermutation, UnpermuteRejectsABadAddend) {
  OwnedRoutingPlan plan(3, 2, 4);
  build_routing_plan(plan, example_topk());
  OwnedTensor y_sorted(Shape{6, 2}, DType::f32), weights(Shape{3, 2}, DType::f32), out(Shape{3, 2}, DType::f32);
  OwnedTensor narrow(Shape{3, 1}, DType::f32), bf16_rows(Shape{3, 2}, DType::bf16);
  EXPECT_THROW(unpermute_tokens(out, y_sorted, weights, plan, narrow), Error);
  EXPECT_THROW(unpermute_tokens(out, y_sorted, weights, plan, bf16_rows), Error);
  EXPECT_THROW(unpermute_tokens(out, y_sorted, weights, plan, out), Error);
}

TEST(TokenPermutation, PermuteThenUnpermuteWithUnitWeightsGivesKTimesX) {
  const int64_t tokens = 9, experts_per_token = 3, experts = 5, width = 4;
  OwnedTensor topk(Shape{tokens, experts_per_token}, DType::i32);
  for (int64_t a = 0; a < topk.numel(); ++a) topk.data<int32_t>()[a] = static_cast<int32_t>((a * 7 + a / 3) % experts);
  OwnedRoutingPlan plan(tokens, experts_per_token, experts);
  build_routing_plan(plan, topk);
  OwnedTensor x = testing::random_tensor(Shape{tokens, width}, 41);
  OwnedTensor x_sorted(Shape{tokens * experts_per_token, width}, DType::f32), out(Shape{tokens, width}, DType::f32);
  OwnedTensor ones(Shape{tokens, experts_per_token}, DType::f32);
  for (int64_t i = 0; i < ones.numel(); ++i) ones.data<float>()[i] = 1.0f;
  permute_tokens(x_sorted, x, plan);
  unpermute_tokens(out, x_sorted, ones, plan);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(out.data<float>()[i], 3.0f * x.data<float>()[i]) << i;
}

// Random assignments for the finite-difference tests: 7 tokens, K = 2, 3 experts, width 5.
struct PermutationCase {
  static constexpr int64_t kTokens = 7, kExpertsPerToken = 2, kExperts = 3, kWidth = 5;
  OwnedRoutingPlan plan{kTokens, kExpertsPerToken, kExperts};
  PermutationCase() {
    OwnedTensor topk(Shape{kTokens, kExpertsPerToken}, DType::i32);
    CounterRng rng(42, 0);
    for (int64_t a = 0; a < topk.numel(); ++a) topk.data<int32_t>()[a] = static_cast<int32_t>(rng.bits(a) % kExperts);
    build_routing_plan(plan, topk);
  }
  Shape tokens() const { return {kTokens, kWidth}; }
  Shape sorted() const { return {kTokens * kExpertsPerToken, kWidth}; }
  Shape weights() const { return {kTokens, kExpertsPerToken}; }
};

TEST(TokenPermutation, PermuteBackwardMatchesFiniteDifferences) {
  PermutationCase example;
  OwnedTensor x = testing::random_tensor(example.tokens(), 43);
  OwnedTensor d_x_sorted = testing::random_tensor(example.sorted(), 44);
  OwnedTensor x_sorted(example.sorted(), DType::f32), d_x(example.tokens(), DType::f32);
  permute_tokens_backward(d_x, d_x_sorted, example.plan);
  auto loss = [&] {
    permute_tokens(x_sorted, x, example.plan);
    return testing::dot(x_sorted, d_x_sorted);
  };
  testing::check_gradient(x, d_x, loss, 1e-3, 1e-3, 1e-3);
}

TEST(TokenPermutation, UnpermuteBackwardMatchesFiniteDifferences) {
  PermutationCase example;
  OwnedTensor y_sorted = testing::random_tensor(example.sorted(), 45);
  OwnedTensor weights = testing::random_tensor(example.weights(), 46);
  OwnedTensor d_out = testing::random_tensor(example.tokens(), 47), out(example.tokens(), DType::f32);
  OwnedTensor d_y_sorted(example.sorted(), DType::f32), d_weights(example.weights(), DType::f32);
  unpermute_tokens_backward(d_y_sorted, d_weights, d_out, y_sorted, weights, example.plan);
  auto loss = [&] {
    unpermute_tokens(out, y_sorted, weights, example.plan);
    return testing::dot(out, d_out);
  };
  testing::check_gradient(y_sorted, d_y_sorted, loss, 1e-3, 1e-3, 1e-3);
  testing::check_gradient(weights, d_weights, loss, 1e-3, 1e-3, 1e-3);
}

// bf16 expert outputs give exactly what their fp32 widening gives (the widening is exact).
TEST(TokenPermutation, UnpermuteBackwardOfBf16RowsEqualsTheirFp32Widening) {
  PermutationCase example;
  OwnedTensor y_bf16(example.sorted(), DType::bf16), y_widened(example.sorted(), DType::f32);
  cast_tensor(y_bf16, testing::random_tensor(example.sorted(), 48));
  cast_tensor(y_widened, y_bf16);
  OwnedTensor weights = testing::random_tensor(example.weights(), 49);
  OwnedTensor d_out = testing::random_tensor(example.tokens(), 50);
  OwnedTensor d_y_bf16(example.sorted(), DType::f32), d_weights_bf16(example.weights(), DType::f32);
  OwnedTensor d_y_f32(example.sorted(), DType::f32), d_weights_f32(example.weights(), DType::f32);
  unpermute_tokens_backward(d_y_bf16, d_weights_bf16, d_out, y_bf16, weights, example.plan);
  unpermute_tokens_backward(d_y_f32, d_weights_f32, d_out, y_widened, weights, example.plan);
  for (int64_t i = 0; i < d_y_f32.numel(); ++i) EXPECT_EQ(d_y_bf16.data<float>()[i], d_y_f32.data<float>()[i]) << i;
  for (int64_t i = 0; i < d_weights_f32.numel(); ++i) {
    EXPECT_EQ(d_weights_bf16.data<float>()[i], d_weights_f32.data<float>()[i]) << i;
  }
}

// A bf16 d_y_sorted (what bf16 experts read) holds the fp32 one rounded once; d_topk_weights is unchanged.
TEST(TokenPermutation, UnpermuteBackwardWritesBf16GradientsRoundedOnce) {
  PermutationCase example;
  OwnedTensor y = testing::random_tensor(example.sorted(), 51);
  OwnedTensor weights = testing::random_tensor(example.weights(), 52);
  OwnedTensor d_out = testing::random_tensor(example.tokens(), 53);
  OwnedTensor d_y_bf16(example.sorted(), DType::bf16), d_weights_bf16(example.weights(), DType::f32);
  OwnedTensor d_y_f32(example.sorted(), DType::f32), d_weights_f32(example.weights(), DType::f32);
  unpermute_tokens_backward(d_y_bf16, d_weights_bf16, d_out, y, weights, example.plan);
  unpermute_tokens_backward(d_y_f32, d_weights_f32, d_out, y, weights, example.plan);
  for (int64_t i = 0; i < d_y_f32.numel(); ++i) {
    EXPECT_EQ(d_y_bf16.data<bf16>()[i].bits, float_to_bf16(d_y_f32.data<float>()[i])) << i;
  }
  for (int64_t i = 0; i < d_weights_f32.numel(); ++i) {
    EXPECT_EQ(d_weights_bf16.data<float>()[i], d_weights_f32.data<float>()[i]) << i;
  }
}

// bf16 rows (the MoE layer rounds x before permuting it) are copied as they are: permuting the rounded rows gives
// the rounded permuted rows bit for bit. Mixed dtypes are refused.
TEST(TokenPermutation, PermutesBf16RowsAsTheyAre) {
  OwnedRoutingPlan plan(3, 2, 4);
  build_routing_plan(plan, example_topk());
  OwnedTensor x = testing::random_tensor(Shape{3, 5}, 7);
  OwnedTensor x_sorted(Shape{6, 5}, DType::f32), rounded_sorted(Shape{6, 5}, DType::bf16);
  permute_tokens(x_sorted, x, plan);
  cast_tensor(rounded_sorted, x_sorted);
  OwnedTensor x_bf16(Shape{3, 5}, DType::bf16), sorted_bf16(Shape{6, 5}, DType::bf16);
  cast_tensor(x_bf16, x);
  permute_tokens(sorted_bf16, x_bf16, plan);
  for (int64_t i = 0; i < 30; ++i) {
    EXPECT_EQ(sorted_bf16.data<bf16>()[i].bits, rounded_sorted.data<bf16>()[i].bits) << i;
  }
  EXPECT_THROW(permute_tokens(x_sorted, x_bf16, plan), Error);
}

// bf16 expert outputs (kept so in bf16 training) combine exactly as their fp32 widening does.
TEST(TokenPermutation, UnpermuteOfBf16RowsEqualsTheirFp32Widening) {
  OwnedRoutingPlan plan(3, 2, 4);
  build_routing_plan(plan, example_topk());
  OwnedTensor y_bf16(Shape{6, 5}, DType::bf16), y_widened(Shape{6, 5}, DType::f32);
  cast_tensor(y_bf16, testing::random_tensor(Shape{6, 5}, 8));
  cast_tensor(y_widened, y_bf16);
  OwnedTensor weights = testing::random_tensor(Shape{3, 2}, 9);
  OwnedTensor out(Shape{3, 5}, DType::f32), expected(Shape{3, 5}, DType::f32);
  unpermute_tokens(out, y_bf16, weights, plan);
  unpermute_tokens(expected, y_widened, weights, plan);
  for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(out.data<float>()[i], expected.data<float>()[i]) << i;
}

TEST(TokenPermutation, RejectsRowsOfTheWrongCount) {
  OwnedRoutingPlan plan(3, 2, 4);
  OwnedTensor x(Shape{3, 2}, DType::f32), x_sorted(Shape{5, 2}, DType::f32);
  EXPECT_THROW(permute_tokens(x_sorted, x, plan), Error);
}

}  // namespace
}  // namespace hai
