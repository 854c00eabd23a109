// ExpertExchange over EP groups of every size that divides the world: each rank sends rows tagged with (source
// rank, global expert, index); the owner receives exactly the rows of its experts, ordered by local expert, then
// source rank, then index; combine returns every (changed) row to the rank and place it came from. dispatch_fp8
// delivers the same rows, each quantised and dequantised in 1x128 tiles as round_trip_fp8_rows makes it, bit for bit.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "framework/core/rng.h"
#include "framework/device/fp8_quantize.h"

#include "parallel/expert_exchange.h"
#include "parallel/topology.h"
#include "tests/framework/comm/world_fixture.h"

namespace hai {
namespace {

using ExpertExchangeWorld = testing::World;

constexpr int64_t kExpertsPerRank = 3;

// Rows that rank `source` routes to global expert `expert`: 0, 1 or 2, some experts receiving none.
int64_t rows_for(int source, int64_t expert) { return (source + 2 * expert) % 3; }

float tag(int source, int64_t expert, int64_t index) {
  return static_cast<float>(source * 1000 + expert * 10 + index);
}

TEST_F(ExpertExchangeWorld, DispatchOrdersByLocalExpertAndCombineReturnsEveryRow) {
  for (int ep = 1; ep <= size(); ++ep) {
    if (size() % ep != 0) continue;
    ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size(), .ep = ep});
    const int me = groups.ep->rank();
    const int64_t experts = kExpertsPerRank * ep;
    ExpertExchange exchange(*groups.ep, experts);
    ASSERT_EQ(exchange.local_experts(), kExpertsPerRank);
    ASSERT_EQ(exchange.first_local_expert(), me * kExpertsPerRank);

    std::vector<int64_t> expert_rows;
    std::vector<float> sorted_values;  // [rows, 2]: (tag, -tag)
    for (int64_t expert = 0; expert < experts; ++expert) {
      expert_rows.push_back(rows_for(me, expert));
      for (int64_t i = 0; i < rows_for(me, expert); ++i) {
        sorted_values.push_back(tag(me, expert, i));
        sorted_values.push_back(-tag(me, expert, i));
      }
    }
    const int64_t sent = static_cast<int64_t>(sorted_values.size()) / 2;
    OwnedTensor sorted(Shape{sent, 2}, DType::f32);  // [sent, 2]
    std::copy(sorted_values.begin(), sorted_values.end(), sorted.data<float>());

    ExpertExchange::Route route = exchange.route(expert_rows);
    EXPECT_EQ(route.sent_total(), sent);
    OwnedTensor local(Shape{route.received_total(), 2}, DType::f32);  // [received, 2]
    exchange.dispatch(route, local, sorted);

    std::vector<float> expected;  // by local expert, then source, then index
    for (int64_t expert = exchange.first_local_expert(); expert < exchange.first_local_expert() + kExpertsPerRank;
         ++expert) {
      EXPECT_EQ(route.local_offsets[expert - exchange.first_local_expert()], static_cast<int64_t>(expected.size()) / 2);
      for (int source = 0; source < ep; ++source) {
        for (int64_t i = 0; i < rows_for(source, expert); ++i) {
          expected.push_back(tag(source, expert, i));
          expected.push_back(-tag(source, expert, i));
        }
      }
    }
    ASSERT_EQ(route.received_total() * 2, static_cast<int64_t>(expected.size())) << "ep " << ep;
    EXPECT_EQ(std::vector<float>(local.data<float>(), local.data<float>() + local.numel()), expected) << "ep " << ep;

    for (int64_t i = 0; i < local.numel(); ++i) local.data<float>()[i] += 0.5f;
    OwnedTensor returned(Shape{sent, 2}, DType::f32);  // [sent, 2]
    exchange.combine(route, returned, local);
    for (int64_t i = 0; i < returned.numel(); ++i) {
      EXPECT_EQ(returned.data<float>()[i], sorted_values[static_cast<size_t>(i)] + 0.5f) << "ep " << ep << " " << i;
    }
  }
}

// Two fp32 tensors of the same size hold the same bits.
bool same_bits(const Tensor& a, const Tensor& b) {
  return std::memcmp(a.raw(), b.raw(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

TEST_F(ExpertExchangeWorld, Fp8DispatchDeliversEachRowRoundTrippedThroughFp8) {
  constexpr int64_t kColumns = 200;  // a whole and a partial 128-column tile
  for (int ep = 1; ep <= size(); ++ep) {
    if (size() % ep != 0) continue;
    ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size(), .ep = ep});
    const int me = groups.ep->rank();
    ExpertExchange exchange(*groups.ep, kExpertsPerRank * ep);
    std::vector<int64_t> expert_rows;
    for (int64_t expert = 0; expert < exchange.routed_experts(); ++expert) expert_rows.push_back(rows_for(me, expert));
    ExpertExchange::Route route = exchange.route(expert_rows);
    OwnedTensor sorted(Shape{route.sent_total(), kColumns}, DType::f32);  // [sent, 200]
    CounterRng rng(/*seed=*/3, /*stream=*/static_cast<uint64_t>(me));
    for (int64_t i = 0; i < sorted.numel(); ++i) sorted.data<float>()[i] = rng.normal(static_cast<uint64_t>(i));

    Shape local_shape{route.received_total(), kColumns};
    OwnedTensor expected(local_shape, DType::f32), local(local_shape, DType::f32);  // [received, 200]
    exchange.dispatch(route, expected, sorted);
    OwnedTensor exact(local_shape, DType::f32);  // [received, 200]
    copy_tensor(exact, expected);
    round_trip_fp8_rows(expected, /*pow2_scales=*/false);
    Fp8Rows arrived = exchange.dispatch_fp8(route, sorted, /*pow2_scales=*/false);  // [received, 200]
    dequantize_1x128(local, arrived.values, arrived.scales);
    EXPECT_TRUE(same_bits(local, expected)) << "ep " << ep;
    if (local.numel() > 0) {
      EXPECT_FALSE(same_bits(local, exact)) << "ep " << ep << ": the rows arrived unquantised";
    }
  }
}

}  // namespace
}  // namespace hai
