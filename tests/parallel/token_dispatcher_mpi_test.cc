// The all-to-all token dispatcher over EP groups of every size that divides the world (ep 2 and 4 under mpirun):
// - dispatch delivers each owner exactly the rows of its experts, by local expert, then source rank, then the
//   source's order (each rank rebuilds every source's routing from its seed to know what should arrive);
// - with a stand-in expert (a row scaled by its expert's number), combine, combine_backward and dispatch_backward
//   give each rank the bits of the ep = 1 dispatcher holding every expert;
// - dispatch_fp8 moves e4m3 rows and their scales as dispatch moves fp32 rows: the quantisation of what arrives;
// - dispatch_again returns kept rows, or exchanges the rows again (selective recomputation): the same bits;
// - the buffers are count-sized: under a skewed routing (every token to rank 0's experts) rank 0 holds exactly the
//   group's T * K rows a rank and the others none, and ranks route different numbers of tokens.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "framework/device/fp8_rows.h"
#include "parallel/all_to_all_token_dispatcher.h"
#include "parallel/topology.h"
#include "tests/framework/comm/world_fixture.h"
#include "tests/parallel/dispatcher_cases.h"

namespace hai {
namespace {

using TokenDispatcherWorld = testing::World;

constexpr int64_t kExpertsPerRank = 3, kExpertsPerToken = 4, kHidden = 5;

int64_t tokens_of(int rank) { return 7 + 2 * rank; }  // ranks may route different numbers of tokens
OwnedTensor topk_of(int rank, int64_t experts) {
  return testing::distinct_topk(tokens_of(rank), kExpertsPerToken, experts, 100 + rank);
}
// [T, H]: row t of rank p holds p * 1000 + t * 10 + column.
OwnedTensor tokens_of_rank(int rank) {
  OwnedTensor x(Shape{tokens_of(rank), kHidden}, DType::f32);
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = static_cast<float>(rank * 1000 + (i / kHidden) * 10 + i % kHidden);
  }
  return x;
}

// The rows `owner` should receive, in the local order.
std::vector<float> expected_local_rows(int owner, int ep, int64_t experts) {
  std::vector<float> rows;
  for (int64_t e = owner * kExpertsPerRank; e < (owner + 1) * kExpertsPerRank; ++e) {
    for (int source = 0; source < ep; ++source) {
      OwnedTensor topk = topk_of(source, experts), x = tokens_of_rank(source);
      for (int64_t a = 0; a < topk.numel(); ++a) {
        if (topk.data<int32_t>()[a] != e) continue;
        const float* row = x.data<float>() + (a / kExpertsPerToken) * kHidden;
        rows.insert(rows.end(), row, row + kHidden);
      }
    }
  }
  return rows;
}

TEST_F(TokenDispatcherWorld, DispatchDeliversEachOwnerItsRowsInTheLocalOrder) {
  for (int ep = 2; ep <= size(); ++ep) {
    if (size() % ep != 0) continue;
    ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size(), .ep = ep});
    const int me = groups.ep->rank();
    const int64_t experts = kExpertsPerRank * ep;
    AllToAllTokenDispatcher dispatcher(*groups.ep, experts);
    ASSERT_TRUE(dispatcher.exchanges());
    TokenDispatcher::Context ctx;
    dispatcher.route(ctx, topk_of(me, experts));
    OwnedTensor local = dispatcher.dispatch(ctx, tokens_of_rank(me));  // [R, H]
    std::vector<float> expected = expected_local_rows(me, ep, experts);
    const int32_t* offsets = dispatcher.local_offsets(ctx).data<int32_t>();
    ASSERT_EQ(offsets[kExpertsPerRank] * kHidden, static_cast<int64_t>(expected.size())) << "ep " << ep;
    ASSERT_EQ(local.numel(), static_cast<int64_t>(expected.size())) << "ep " << ep;  // no row beyond the received
    EXPECT_EQ(dispatcher.local_rows(ctx), offsets[kExpertsPerRank]);
    std::vector<float> got(local.data<float>(), local.data<float>() + expected.size());
    EXPECT_EQ(got, expected) << "ep " << ep;
  }
}

TEST_F(TokenDispatcherWorld, CombineAndBackwardGiveTheBitsOfOneRank) {
  for (int ep = 2; ep <= size(); ++ep) {
    if (size() % ep != 0) continue;
    ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size(), .ep = ep});
    const int me = groups.ep->rank();
    const int64_t experts = kExpertsPerRank * ep, tokens = tokens_of(me);
    AllToAllTokenDispatcher dispatcher(*groups.ep, experts);
    std::unique_ptr<TokenDispatcher> local_dispatcher = make_token_dispatcher(experts, nullptr);
    OwnedTensor topk = topk_of(me, experts), x = tokens_of_rank(me);
    OwnedTensor weights = testing::random_tensor(Shape{tokens, kExpertsPerToken}, 7 + me);
    OwnedTensor d_out = testing::random_tensor(x.shape(), 8 + me);
    struct Results {
      OwnedTensor out, d_weights, d_x;
    };
    auto run = [&](const TokenDispatcher& d) {
      TokenDispatcher::Context ctx;
      d.route(ctx, topk);
      OwnedTensor local = d.dispatch(ctx, x);
      testing::scale_by_expert(local, d.local_offsets(ctx), d.first_local_expert());
      Results r{OwnedTensor(x.shape(), DType::f32), OwnedTensor(weights.shape(), DType::f32),
                OwnedTensor(x.shape(), DType::f32)};
      d.combine(ctx, r.out, std::move(local), weights, x);
      OwnedTensor d_local = d.combine_backward(ctx, r.d_weights, d_out, weights, DType::f32);
      testing::scale_by_expert(d_local, d.local_offsets(ctx), d.first_local_expert());
      d.dispatch_backward(ctx, r.d_x, std::move(d_local));
      return r;
    };
    Results exchanged = run(dispatcher), alone = run(*local_dispatcher);
    EXPECT_TRUE(testing::same_bytes(exchanged.out, alone.out)) << "ep " << ep;
    EXPECT_TRUE(testing::same_bytes(exchanged.d_weights, alone.d_weights)) << "ep " << ep;
    EXPECT_TRUE(testing::same_bytes(exchanged.d_x, alone.d_x)) << "ep " << ep;
  }
}

TEST_F(TokenDispatcherWorld, Fp8DispatchMovesValuesAndScalesAlike) {
  const int ep = size();
  ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size(), .ep = ep});
  const int me = groups.ep->rank();
  const int64_t experts = kExpertsPerRank * ep;
  AllToAllTokenDispatcher dispatcher(*groups.ep, experts);
  TokenDispatcher::Context ctx;
  dispatcher.route(ctx, topk_of(me, experts));
  OwnedTensor x = testing::random_tensor(Shape{tokens_of(me), 200}, 9 + me);  // a whole and a partial tile
  OwnedTensor local = dispatcher.dispatch(ctx, x);                           // [R, 200]
  Fp8Rows arrived = dispatcher.dispatch_fp8(ctx, quantize_rows(x, /*pow2_scales=*/false));
  Fp8Rows expected = quantize_rows(local, /*pow2_scales=*/false);
  EXPECT_TRUE(testing::same_bytes(arrived.values, expected.values));
  EXPECT_TRUE(testing::same_bytes(arrived.scales, expected.scales));
}

// dispatch_again and dispatch_fp8_again: kept rows come back without calling tokens(); rows not kept (selective
// recomputation) are exchanged again with the forward's counts, the bits dispatch and dispatch_fp8 delivered.
TEST_F(TokenDispatcherWorld, DispatchAgainGivesTheBitsOfTheDispatch) {
  const int ep = size();
  ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size(), .ep = ep});
  const int me = groups.ep->rank();
  const int64_t experts = kExpertsPerRank * ep;
  AllToAllTokenDispatcher dispatcher(*groups.ep, experts);
  OwnedTensor x = testing::random_tensor(Shape{tokens_of(me), 200}, 11 + me);  // [T, 200]
  TokenDispatcher::Context ctx;
  dispatcher.route(ctx, topk_of(me, experts));
  OwnedTensor local = dispatcher.dispatch(ctx, x);  // [R, 200], not kept
  Fp8Rows local_fp8 = dispatcher.dispatch_fp8(ctx, quantize_rows(x, /*pow2_scales=*/false));
  OwnedTensor again = dispatcher.dispatch_again(ctx, [&] { return x.tensor(); });
  EXPECT_TRUE(testing::same_bytes(again, local));
  Fp8Rows again_fp8 = dispatcher.dispatch_fp8_again(ctx, [&] { return quantize_rows(x, /*pow2_scales=*/false); });
  EXPECT_TRUE(testing::same_bytes(again_fp8.values, local_fp8.values));
  EXPECT_TRUE(testing::same_bytes(again_fp8.scales, local_fp8.scales));

  dispatcher.keep_for_weight_gradient(ctx, std::move(again));
  bool asked = false;
  OwnedTensor kept = dispatcher.dispatch_again(ctx, [&] {
    asked = true;
    return x.tensor();
  });
  EXPECT_FALSE(asked);
  EXPECT_TRUE(testing::same_bytes(kept, local));
}

// Every token of every rank routed to rank 0's experts (K = L): rank 0 receives the group's sum(T) * K rows and
// every buffer it holds has exactly those rows; the other ranks receive none and hold none; the combine still gives
// the bits of one rank.
TEST_F(TokenDispatcherWorld, SkewedRoutingAllocatesExactlyTheRowsReceived) {
  const int ep = size();
  ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size(), .ep = ep});
  const int me = groups.ep->rank();
  const int64_t experts = kExpertsPerRank * ep, tokens = tokens_of(me), k = kExpertsPerRank;
  OwnedTensor topk(Shape{tokens, k}, DType::i32);  // [T, K]: token t -> experts 0, 1, 2 in a rotated order
  for (int64_t i = 0; i < topk.numel(); ++i) topk.data<int32_t>()[i] = static_cast<int32_t>((i / k + i % k) % k);
  int64_t group_rows = 0;
  for (int rank = 0; rank < ep; ++rank) group_rows += tokens_of(rank) * k;
  const int64_t expected_rows = me == 0 ? group_rows : 0;

  AllToAllTokenDispatcher dispatcher(*groups.ep, experts);
  TokenDispatcher::Context ctx;
  dispatcher.route(ctx, topk);
  EXPECT_EQ(ctx.recv_rows[0], me == 0 ? tokens_of(0) * k : 0);
  EXPECT_EQ(ctx.send_rows[0], tokens * k);  // everything this rank routes goes to rank 0
  EXPECT_EQ(ctx.receive.local_arrival.numel(), expected_rows);
  EXPECT_EQ(ctx.receive.arrival_local.numel(), expected_rows);
  OwnedTensor x = tokens_of_rank(me);
  OwnedTensor local = dispatcher.dispatch(ctx, x);  // [R, H]
  EXPECT_EQ(local.shape(), (Shape{expected_rows, kHidden}));
  EXPECT_EQ(dispatcher.local_rows(ctx), expected_rows);

  testing::scale_by_expert(local, dispatcher.local_offsets(ctx), dispatcher.first_local_expert());
  OwnedTensor weights = testing::random_tensor(Shape{tokens, k}, 17 + me);
  OwnedTensor out(x.shape(), DType::f32), expected(x.shape(), DType::f32);
  dispatcher.combine(ctx, out, std::move(local), weights, x);
  EXPECT_EQ(ctx.outputs.shape(), (Shape{tokens * k, kHidden}));  // the returned rows: this rank's T * K

  std::unique_ptr<TokenDispatcher> alone = make_token_dispatcher(experts, nullptr);
  TokenDispatcher::Context alone_ctx;
  alone->route(alone_ctx, topk);
  OwnedTensor alone_local = alone->dispatch(alone_ctx, x);
  testing::scale_by_expert(alone_local, alone->local_offsets(alone_ctx), 0);
  alone->combine(alone_ctx, expected, std::move(alone_local), weights, x);
  EXPECT_TRUE(testing::same_bytes(out, expected));
}

}  // namespace
}  // namespace hai
