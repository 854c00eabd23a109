#include <gtest/gtest.h>

#include <vector>

#include "framework/device/balance_loss.h"
#include "framework/device/router.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

template <typename T>
void fill(const Tensor& tensor, const std::vector<T>& values) {
  ASSERT_EQ(static_cast<int64_t>(values.size()), tensor.numel());
  std::copy(values.begin(), values.end(), tensor.data<T>());
}

// Two sequences of 2 tokens, 2 experts, 1 expert per token.
// Sequence 0: both tokens chose expert 0, so f = [2, 0]; P_0 = (0.5 / 1 + 0.2 / 0.8) / 2 = 0.375; loss = 0.75 alpha.
// Sequence 1: one token each, f = [1, 1]; P_0 + P_1 = 1; loss = alpha.
TEST(BalanceLoss, ForwardHandComputed) {
  OwnedTensor scores(Shape{4, 2}, DType::f32), topk(Shape{4, 1}, DType::i32);
  OwnedTensor loss(Shape{2}, DType::f32), fraction(Shape{2, 2}, DType::f32);
  fill<float>(scores, {0.5f, 0.5f, 0.2f, 0.6f, 0.25f, 0.75f, 0.4f, 0.4f});
  fill<int32_t>(topk, {0, 0, 1, 0});
  balance_loss_forward(loss, fraction, scores, topk, 0.1f);
  EXPECT_FLOAT_EQ(fraction.data<float>()[0], 2.0f);
  EXPECT_FLOAT_EQ(fraction.data<float>()[1], 0.0f);
  EXPECT_FLOAT_EQ(fraction.data<float>()[2], 1.0f);
  EXPECT_FLOAT_EQ(fraction.data<float>()[3], 1.0f);
  EXPECT_FLOAT_EQ(loss.data<float>()[0], 0.1f * 0.75f);
  EXPECT_FLOAT_EQ(loss.data<float>()[1], 0.1f);
}

// f_i = E / (K L) * count: 4 experts, K = 2, one sequence of 2 tokens choosing {0, 1} and {0, 3}.
TEST(BalanceLoss, ExpertFractionCountsEveryChoice) {
  OwnedTensor scores(Shape{2, 4}, DType::f32), topk(Shape{2, 2}, DType::i32);
  OwnedTensor loss(Shape{1}, DType::f32), fraction(Shape{1, 4}, DType::f32);
  fill<float>(scores, {0.1f, 0.2f, 0.3f, 0.4f, 0.4f, 0.3f, 0.2f, 0.1f});
  fill<int32_t>(topk, {0, 1, 0, 3});
  balance_loss_forward(loss, fraction, scores, topk, 1.0f);
  EXPECT_EQ(std::vector<float>(fraction.data<float>(), fraction.data<float>() + 4),
            (std::vector<float>{2.0f, 1.0f, 0.0f, 1.0f}));
  // P = [(0.1 + 0.4) / 2, (0.2 + 0.3) / 2, ., (0.4 + 0.1) / 2] (each Z_t = 1)
  EXPECT_FLOAT_EQ(loss.data<float>()[0], 2.0f * 0.25f + 1.0f * 0.25f + 1.0f * 0.25f);
}

// The router and balance-loss setting shared by the finite-difference tests: 3 sequences of 4 tokens.
struct RoutedBatch {
  static constexpr int64_t kTokens = 12, kExperts = 8, kExpertsPerToken = 2, kSequences = 3;
  RouterOptions options{.groups = 4, .groups_per_token = 2, .routed_scaling_factor = 2.5f};
  float alpha = 0.5f;
  OwnedTensor logits = testing::random_tensor(Shape{kTokens, kExperts}, 31);
  OwnedTensor bias = testing::random_tensor(Shape{kExperts}, 32, 0.1f);
  OwnedTensor scores{Shape{kTokens, kExperts}, DType::f32};
  OwnedTensor topk_indices{Shape{kTokens, kExpertsPerToken}, DType::i32};
  OwnedTensor topk_weights{Shape{kTokens, kExpertsPerToken}, DType::f32};
  OwnedTensor loss{Shape{kSequences}, DType::f32};
  OwnedTensor fraction{Shape{kSequences, kExperts}, DType::f32};
  OwnedTensor d_loss = testing::random_tensor(Shape{kSequences}, 33);
  OwnedTensor d_weights = testing::random_tensor(Shape{kTokens, kExpertsPerToken}, 34);
  std::vector<int32_t> selection;

  void forward() {
    router_forward(scores, topk_indices, topk_weights, logits, bias, options);
    balance_loss_forward(loss, fraction, scores, topk_indices, alpha);
  }
  // Records the selection that the perturbed forwards must reproduce (see router_test.cc).
  void record_selection() {
    selection.assign(topk_indices.data<int32_t>(), topk_indices.data<int32_t>() + topk_indices.numel());
  }
  void expect_same_selection() const {
    EXPECT_EQ(std::vector<int32_t>(topk_indices.data<int32_t>(), topk_indices.data<int32_t>() + topk_indices.numel()),
              selection)
        << "the perturbation changed the selection";
  }
};

TEST(BalanceLoss, BackwardMatchesFiniteDifferences) {
  RoutedBatch batch;
  batch.forward();
  batch.record_selection();
  OwnedTensor d_logits(batch.logits.shape(), DType::f32);
  balance_loss_backward(d_logits, batch.d_loss, batch.fraction, batch.scores, batch.alpha);
  auto loss = [&] {
    batch.forward();
    batch.expect_same_selection();
    return testing::dot(batch.loss, batch.d_loss);
  };
  testing::check_gradient(batch.logits, d_logits, loss, 1e-3, 5e-5, 1e-2);
}

// router_backward overwrites and balance_loss_backward adds: together they give the gradient of the weights'
// loss plus the balance loss.
TEST(BalanceLoss, ComposesWithRouterBackward) {
  RoutedBatch batch;
  batch.forward();
  batch.record_selection();
  OwnedTensor d_logits(batch.logits.shape(), DType::f32);
  d_logits.data<float>()[0] = 123.0f;  // overwritten by router_backward
  router_backward(d_logits, batch.d_weights, batch.scores, batch.topk_indices, batch.options.routed_scaling_factor);
  balance_loss_backward(d_logits, batch.d_loss, batch.fraction, batch.scores, batch.alpha);
  auto loss = [&] {
    batch.forward();
    batch.expect_same_selection();
    return testing::dot(batch.loss, batch.d_loss) + testing::dot(batch.topk_weights, batch.d_weights);
  };
  testing::check_gradient(batch.logits, d_logits, loss, 1e-3, 1e-4, 1e-2);
}

TEST(BalanceLoss, RejectsTokensThatDoNotSplitIntoSequences) {
  OwnedTensor scores(Shape{5, 2}, DType::f32), topk(Shape{5, 1}, DType::i32);
  OwnedTensor loss(Shape{2}, DType::f32), fraction(Shape{2, 2}, DType::f32);
  EXPECT_THROW(balance_loss_forward(loss, fraction, scores, topk, 1.0f), Error);
}

}  // namespace
}  // namespace hai
