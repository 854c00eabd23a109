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
  EXPECT_THROW(make_parallel_groups(world, GridShape{.dp = 2}), Error);
}

}  // namespace
}  // namespace hai
