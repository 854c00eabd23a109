#include <gtest/gtest.h>

#include "framework/comm/single_rank_communicator.h"
#include "framework/core/error.h"
#include "parallel/topology.h"

namespace hai {
namespace {

TEST(Topology, RankOrderIsTpThenDpThenPp) {
  GridShape grid{.dp = 3, .pp = 2, .tp = 2};
  ASSERT_EQ(grid.world(), 12);
  // rank = tp + 2 * (dp + 3 * pp)
  RankCoordinates seven = rank_coordinates(grid, 7);
  EXPECT_EQ(seven.tp, 1);
  EXPECT_EQ(seven.dp, 0);
  EXPECT_EQ(seven.pp, 1);
  RankCoordinates four = rank_coordinates(grid, 4);
  EXPECT_EQ(four.tp, 0);
  EXPECT_EQ(four.dp, 2);
  EXPECT_EQ(four.pp, 0);
  for (int rank = 0; rank < grid.world(); ++rank) EXPECT_EQ(rank_at(grid, rank_coordinates(grid, rank)), rank);
}

TEST(Topology, RankOutsideTheGridThrows) {
  GridShape grid{.dp = 2};
  EXPECT_THROW(rank_coordinates(grid, 2), Error);
  EXPECT_THROW(rank_coordinates(grid, -1), Error);
}

TEST(Topology, GridFromResolvedConfig) {
  ParallelConfig parallel;
  parallel.dp = 4;
  parallel.pp = 2;
  GridShape grid = grid_shape(parallel);
  EXPECT_EQ(grid.dp, 4);
  EXPECT_EQ(grid.pp, 2);
  EXPECT_EQ(grid.tp, 1);
  parallel.dp = std::nullopt;
  EXPECT_THROW(grid_shape(parallel), Error);
}

TEST(Topology, SingleRankGroups) {
  SingleRankCommunicator world;
  ParallelGroups groups = make_parallel_groups(world, GridShape{});
  EXPECT_EQ(groups.dp->size(), 1);
  EXPECT_EQ(groups.dp->rank(), 0);
  EXPECT_EQ(groups.ep->size(), 1);
  EXPECT_EQ(groups.expert_dp->size(), 1);
  EXPECT_THROW(make_parallel_groups(world, GridShape{.dp = 2}), Error);
}

TEST(Topology, ExpertGroupsAreConsecutiveRanksOfAStage) {
  // A stage of dp 4 x tp 2 = 8 ranks with ep 4: stage rank s = tp + 2 dp, EP rank s % 4, EP group s / 4.
  GridShape grid{.dp = 4, .pp = 2, .tp = 2, .ep = 4};
  EXPECT_EQ(grid.expert_dp(), 2);
  ExpertCoordinates rank_13 = expert_coordinates(grid, rank_coordinates(grid, 13));  // tp 1, dp 2, pp 1: s = 5
  EXPECT_EQ(rank_13.ep, 1);
  EXPECT_EQ(rank_13.ep_group, 1);
  ExpertCoordinates rank_6 = expert_coordinates(grid, rank_coordinates(grid, 6));  // tp 0, dp 3, pp 0: s = 6
  EXPECT_EQ(rank_6.ep, 2);
  EXPECT_EQ(rank_6.ep_group, 1);
  ExpertCoordinates alone = expert_coordinates(GridShape{.dp = 4}, RankCoordinates{.dp = 3});
  EXPECT_EQ(alone.ep, 0);
  EXPECT_EQ(alone.ep_group, 3);
}

TEST(Topology, EpMustDivideDpTimesTp) {
  ParallelConfig parallel;
  parallel.dp = 4;
  parallel.ep = 2;
  EXPECT_EQ(grid_shape(parallel).ep, 2);
  parallel.ep = 3;
  EXPECT_THROW(grid_shape(parallel), Error);
}

}  // namespace
}  // namespace hai
