#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "framework/device/router.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// Router inputs and outputs for T tokens, E experts, K experts per token.
struct RouterBuffers {
  OwnedTensor logits, bias, scores, topk_indices, topk_weights;

  RouterBuffers(int64_t tokens, int64_t experts, int64_t experts_per_token)
      : logits(Shape{tokens, experts}, DType::f32),
        bias(Shape{experts}, DType::f32),
        scores(Shape{tokens, experts}, DType::f32),
        topk_indices(Shape{tokens, experts_per_token}, DType::i32),
        topk_weights(Shape{tokens, experts_per_token}, DType::f32) {}

  void run(const RouterOptions& options) { router_forward(scores, topk_indices, topk_weights, logits, bias, options); }
  std::vector<int32_t> indices() const {
    const int32_t* data = topk_indices.data<int32_t>();
    return {data, data + topk_indices.numel()};
  }
};

// Logits whose sigmoid is the given probability.
void set_scores(const Tensor& logits, const std::vector<float>& probabilities) {
  for (size_t i = 0; i < probabilities.size(); ++i) {
    logits.data<float>()[i] = std::log(probabilities[i] / (1.0f - probabilities[i]));
  }
}

// weights[k] = score[idx[k]] / sum * factor, in double from the op's own scores.
void expect_weights(const RouterBuffers& router, int64_t token, double factor) {
  int64_t experts = router.scores.shape()[1], experts_per_token = router.topk_indices.shape()[1];
  const float* score = router.scores.data<float>() + token * experts;
  const int32_t* chosen = router.topk_indices.data<int32_t>() + token * experts_per_token;
  double sum = 0;
  for (int64_t k = 0; k < experts_per_token; ++k) sum += score[chosen[k]];
  for (int64_t k = 0; k < experts_per_token; ++k) {
    EXPECT_NEAR(router.topk_weights.data<float>()[token * experts_per_token + k], score[chosen[k]] / sum * factor,
                1e-6);
  }
}

// 8 experts in 4 groups of 2; group scores (top1 + top2) are 1.0, 1.2, 1.05, 0.5. With 2 groups per token, the
// best single expert (0, score 0.9) sits in a dropped group and must not be chosen.
TEST(Router, GroupLimitExcludesTheBestExpertOfADroppedGroup) {
  RouterBuffers router(1, 8, 3);
  set_scores(router.logits, {0.9f, 0.1f, 0.6f, 0.6f, 0.55f, 0.5f, 0.2f, 0.3f});
  router.run({.groups = 4, .groups_per_token = 2, .routed_scaling_factor = 2.5f});
  EXPECT_EQ(router.indices(), (std::vector<int32_t>{2, 3, 4}));  // 2 and 3 tie: the lower index comes first
  EXPECT_NEAR(router.scores.data<float>()[0], 0.9f, 1e-6);
  expect_weights(router, 0, 2.5);
  float weight_sum = 0;
  for (int k = 0; k < 3; ++k) weight_sum += router.topk_weights.data<float>()[k];
  EXPECT_NEAR(weight_sum, 2.5f, 1e-6);
}

TEST(Router, WithoutGroupLimitTheBestExpertsWin) {
  RouterBuffers router(1, 8, 3);
  set_scores(router.logits, {0.9f, 0.1f, 0.6f, 0.6f, 0.55f, 0.5f, 0.2f, 0.3f});
  router.run({.groups = 1, .groups_per_token = 1, .routed_scaling_factor = 1.0f});
  EXPECT_EQ(router.indices(), (std::vector<int32_t>{0, 2, 3}));
  expect_weights(router, 0, 1.0);
}

// The bias lifts group 3 (selection values 1.2 and 1.3) to the top, so experts 7 and 6 are chosen first; the
// weights still come from the uncorrected scores 0.3, 0.2, 0.6.
TEST(Router, BiasSteersSelectionButNotWeights) {
  RouterBuffers router(1, 8, 3);
  set_scores(router.logits, {0.9f, 0.1f, 0.6f, 0.6f, 0.55f, 0.5f, 0.2f, 0.3f});
  router.bias.data<float>()[6] = 1.0f, router.bias.data<float>()[7] = 1.0f;
  router.run({.groups = 4, .groups_per_token = 2, .routed_scaling_factor = 1.0f});
  EXPECT_EQ(router.indices(), (std::vector<int32_t>{7, 6, 2}));
  EXPECT_NEAR(router.topk_weights.data<float>()[0], 0.3 / 1.1, 1e-6);
  EXPECT_NEAR(router.topk_weights.data<float>()[1], 0.2 / 1.1, 1e-6);
  EXPECT_NEAR(router.topk_weights.data<float>()[2], 0.6 / 1.1, 1e-6);
}

// Groups of one expert score by that one value: 4 groups, 2 kept, so top-2 of all experts.
TEST(Router, SingleExpertGroupsUseTheirOneValue) {
  RouterBuffers router(1, 4, 2);
  set_scores(router.logits, {0.2f, 0.7f, 0.4f, 0.8f});
  router.run({.groups = 4, .groups_per_token = 2, .routed_scaling_factor = 1.0f});
  EXPECT_EQ(router.indices(), (std::vector<int32_t>{3, 1}));
}

// All-equal logits: ties go to the lower group, then the lower expert.
TEST(Router, TiesPreferLowerIndices) {
  RouterBuffers router(2, 6, 3);
  router.run({.groups = 3, .groups_per_token = 2, .routed_scaling_factor = 1.0f});
  EXPECT_EQ(router.indices(), (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  for (int k = 0; k < 6; ++k) EXPECT_FLOAT_EQ(router.topk_weights.data<float>()[k], 1.0f / 3.0f);
}

// The selection rule written out with sorts, for random comparisons.
std::vector<int32_t> reference_selection(const float* score, const float* bias, int64_t experts,
                                         int64_t experts_per_token, const RouterOptions& options) {
  int64_t group_size = experts / options.groups;
  std::vector<float> selection(experts);
  for (int64_t e = 0; e < experts; ++e) selection[e] = score[e] + bias[e];
  std::vector<float> group_scores(options.groups);
  for (int64_t g = 0; g < options.groups; ++g) {
    std::vector<float> members(selection.begin() + g * group_size, selection.begin() + (g + 1) * group_size);
    std::sort(members.begin(), members.end(), std::greater<>());
    group_scores[g] = members.size() == 1 ? members[0] : members[0] + members[1];
  }
  auto by_value = [](const std::vector<float>& values) {
    return [&values](int64_t a, int64_t b) { return values[a] > values[b] || (values[a] == values[b] && a < b); };
  };
  std::vector<int64_t> groups(options.groups);
  std::iota(groups.begin(), groups.end(), 0);
  std::sort(groups.begin(), groups.end(), by_value(group_scores));
  std::vector<int64_t> candidates;
  for (int64_t i = 0; i < options.groups_per_token; ++i) {
    for (int64_t e = groups[i] * group_size; e < (groups[i] + 1) * group_size; ++e) candidates.push_back(e);
  }
  std::sort(candidates.begin(), candidates.end(), by_value(selection));
  return {candidates.begin(), candidates.begin() + experts_per_token};
}

TEST(Router, MatchesSortBasedReferenceOnRandomInputs) {
  const int64_t tokens = 40, experts = 16, experts_per_token = 4;
  RouterOptions options{.groups = 4, .groups_per_token = 2, .routed_scaling_factor = 2.5f};
  RouterBuffers router(tokens, experts, experts_per_token);
  OwnedTensor logits = testing::random_tensor(router.logits.shape(), 11);
  OwnedTensor bias = testing::random_tensor(Shape{experts}, 12, 0.1f);
  copy_tensor(router.logits, logits);
  copy_tensor(router.bias, bias);
  router.run(options);
  std::vector<int32_t> indices = router.indices();
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<int32_t> expected = reference_selection(router.scores.data<float>() + t * experts,
                                                        router.bias.data<float>(), experts, experts_per_token, options);
    std::vector<int32_t> actual(indices.begin() + t * experts_per_token,
                                indices.begin() + (t + 1) * experts_per_token);
    EXPECT_EQ(actual, expected) << "token " << t;
    expect_weights(router, t, 2.5);
  }
}

// The selection is piecewise constant; the FD check is only meaningful where it does not move. The loss callback
// asserts that every perturbed forward chooses exactly the unperturbed experts (in the same order), so a flip
// would fail the test loudly instead of producing a wrong FD value. Random logits of this seed keep the margins
// between chosen/unchosen experts and kept/dropped groups far above the 1e-3 step.
TEST(Router, BackwardMatchesFiniteDifferences) {
  const int64_t tokens = 6, experts = 12, experts_per_token = 3;
  RouterOptions options{.groups = 4, .groups_per_token = 2, .routed_scaling_factor = 2.5f};
  RouterBuffers router(tokens, experts, experts_per_token);
  copy_tensor(router.logits, testing::random_tensor(router.logits.shape(), 21));
  copy_tensor(router.bias, testing::random_tensor(Shape{experts}, 22, 0.1f));
  OwnedTensor d_weights = testing::random_tensor(router.topk_weights.shape(), 23);
  OwnedTensor d_logits(router.logits.shape(), DType::f32);
  router.run(options);
  std::vector<int32_t> selection = router.indices();
  router_backward(d_logits, d_weights, router.scores, router.topk_indices, options.routed_scaling_factor);
  auto loss = [&] {
    router.run(options);
    EXPECT_EQ(router.indices(), selection) << "the perturbation changed the selection";
    return testing::dot(router.topk_weights, d_weights);
  };
  testing::check_gradient(router.logits, d_logits, loss, 1e-3, 1e-4, 1e-2);
}

TEST(Router, UnchosenExpertsGetNoGradient) {
  RouterBuffers router(1, 8, 3);
  set_scores(router.logits, {0.9f, 0.1f, 0.6f, 0.6f, 0.55f, 0.5f, 0.2f, 0.3f});
  router.run({.groups = 4, .groups_per_token = 2, .routed_scaling_factor = 1.0f});
  OwnedTensor d_weights(Shape{1, 3}, DType::f32), d_logits(Shape{1, 8}, DType::f32);
  for (int k = 0; k < 3; ++k) d_weights.data<float>()[k] = static_cast<float>(k + 1);
  router_backward(d_logits, d_weights, router.scores, router.topk_indices, 1.0f);
  for (int e : {0, 1, 5, 6, 7}) EXPECT_EQ(d_logits.data<float>()[e], 0.0f) << e;
  EXPECT_NE(d_logits.data<float>()[2], 0.0f);
}

TEST(Router, RejectsBadOptions) {
  RouterBuffers router(1, 8, 3);
  EXPECT_THROW(router.run({.groups = 3, .groups_per_token = 1}), Error);  // 8 experts do not split into 3 groups
  EXPECT_THROW(router.run({.groups = 4, .groups_per_token = 5}), Error);  // more groups per token than groups
  EXPECT_THROW(router.run({.groups = 4, .groups_per_token = 1}), Error);  // 1 group of 2 cannot give 3 experts
}

}  // namespace
}  // namespace hai
