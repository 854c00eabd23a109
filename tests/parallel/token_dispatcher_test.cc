// The ep = 1 token dispatcher (LocalTokenDispatcher): route builds the routing plan; dispatch is the plan's
// permutation, local_offsets its expert offsets, combine the weighted unpermutation and the backward steps their
// backward ops, bit for bit.

#include <gtest/gtest.h>

#include "framework/device/token_permutation.h"
#include "parallel/local_token_dispatcher.h"
#include "tests/parallel/dispatcher_cases.h"

namespace hai {
namespace {

constexpr int64_t kTokens = 7, kExpertsPerToken = 3, kExperts = 5, kHidden = 6;

TEST(LocalTokenDispatcher, StepsAreThePermutationAndItsInverse) {
  std::unique_ptr<TokenDispatcher> dispatcher = make_token_dispatcher(kExperts, nullptr);
  EXPECT_FALSE(dispatcher->exchanges());
  EXPECT_EQ(dispatcher->local_experts(), kExperts);
  OwnedTensor topk = testing::distinct_topk(kTokens, kExpertsPerToken, kExperts, 3);
  OwnedTensor x = testing::random_tensor(Shape{kTokens, kHidden}, 4);
  OwnedTensor weights = testing::random_tensor(Shape{kTokens, kExpertsPerToken}, 5);
  OwnedRoutingPlan plan(kTokens, kExpertsPerToken, kExperts);
  build_routing_plan(plan, topk);

  TokenDispatcher::Context ctx;
  dispatcher->route(ctx, topk);
  EXPECT_TRUE(testing::same_bytes(dispatcher->local_offsets(ctx), plan.plan().expert_offsets));
  EXPECT_EQ(dispatcher->local_rows(ctx), kTokens * kExpertsPerToken);
  OwnedTensor local = dispatcher->dispatch(ctx, x);  // [T * K, H]
  OwnedTensor sorted(Shape{kTokens * kExpertsPerToken, kHidden}, DType::f32);
  permute_tokens(sorted, x, plan);
  EXPECT_TRUE(testing::same_bytes(local, sorted));

  testing::scale_by_expert(local, dispatcher->local_offsets(ctx), 0);
  OwnedTensor expected_out(x.shape(), DType::f32), out(x.shape(), DType::f32);
  unpermute_tokens(expected_out, local, weights, plan, x);
  dispatcher->combine(ctx, out, host_copy(local), weights, x);
  EXPECT_TRUE(testing::same_bytes(out, expected_out));

  OwnedTensor d_out = testing::random_tensor(x.shape(), 6);
  OwnedTensor d_weights(weights.shape(), DType::f32), expected_d_weights(weights.shape(), DType::f32);
  OwnedTensor expected_d_sorted(local.shape(), DType::f32);
  unpermute_tokens_backward(expected_d_sorted, expected_d_weights, d_out, local, weights, plan);
  OwnedTensor d_local = dispatcher->combine_backward(ctx, d_weights, d_out, weights, DType::f32);
  EXPECT_TRUE(testing::same_bytes(d_local, expected_d_sorted));
  EXPECT_TRUE(testing::same_bytes(d_weights, expected_d_weights));

  OwnedTensor d_x(x.shape(), DType::f32), expected_d_x(x.shape(), DType::f32);
  permute_tokens_backward(expected_d_x, d_local, plan);
  dispatcher->dispatch_backward(ctx, d_x, std::move(d_local));
  EXPECT_TRUE(testing::same_bytes(d_x, expected_d_x));
}

}  // namespace
}  // namespace hai
