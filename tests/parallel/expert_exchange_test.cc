// ExpertExchange on a group of one rank: every expert is local, dispatch and combine copy the rows as they are.

#include <gtest/gtest.h>

#include <vector>

#include "framework/comm/single_rank_communicator.h"
#include "framework/core/error.h"
#include "parallel/expert_exchange.h"

namespace hai {
namespace {

TEST(ExpertExchange, OneRankIsTheIdentity) {
  SingleRankCommunicator group;
  ExpertExchange exchange(group, 3);
  EXPECT_EQ(exchange.local_experts(), 3);
  EXPECT_EQ(exchange.first_local_expert(), 0);
  std::vector<int64_t> expert_rows{2, 0, 1};
  ExpertExchange::Route route = exchange.route(expert_rows);
  EXPECT_EQ(route.send_rows, std::vector<int64_t>{3});
  EXPECT_EQ(route.recv_rows, std::vector<int64_t>{3});
  EXPECT_EQ(route.local_offsets, (std::vector<int64_t>{0, 2, 2, 3}));
  OwnedTensor sorted(Shape{3, 2}, DType::f32), local(Shape{3, 2}, DType::f32), back(Shape{3, 2}, DType::f32);
  for (int64_t i = 0; i < 6; ++i) sorted.data<float>()[i] = static_cast<float>(i) + 1.0f;
  exchange.dispatch(route, local, sorted);
  exchange.combine(route, back, local);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(local.data<float>()[i], static_cast<float>(i) + 1.0f);
    EXPECT_EQ(back.data<float>()[i], static_cast<float>(i) + 1.0f);
  }
}

TEST(ExpertExchange, RejectsExpertsThatDoNotSplitEvenlyAndWrongCounts) {
  SingleRankCommunicator group;
  EXPECT_THROW(ExpertExchange(group, 0), Error);
  ExpertExchange exchange(group, 4);
  std::vector<int64_t> three{1, 1, 1};
  EXPECT_THROW(exchange.route(three), Error);
}

}  // namespace
}  // namespace hai
