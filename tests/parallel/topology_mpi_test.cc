// The DP group of the job's grid: dp = world / tp ranks sharing (pp, tp), ranked by their dp coordinate.

#include <gtest/gtest.h>

#include "framework/tensor/tensor.h"
#include "parallel/topology.h"
#include "tests/framework/comm/world_fixture.h"

namespace hai {
namespace {

using TopologyWorld = testing::World;

TEST_F(TopologyWorld, DpGroupOfAPureDataParallelGrid) {
  ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size()});
  EXPECT_EQ(groups.dp->size(), size());
  EXPECT_EQ(groups.dp->rank(), rank());
}

TEST_F(TopologyWorld, DpGroupsUnderTensorParallelism) {
  if (size() % 2 != 0) GTEST_SKIP() << "needs an even number of ranks";
  GridShape grid{.dp = size() / 2, .tp = 2};
  ParallelGroups groups = make_parallel_groups(*world_, grid);
  RankCoordinates here = rank_coordinates(grid, rank());
  EXPECT_EQ(groups.dp->size(), size() / 2);
  EXPECT_EQ(groups.dp->rank(), here.dp);
  // The group's members share the tp coordinate: summing (tp + 1) over it gives size * (tp + 1).
  OwnedTensor value(Shape{1}, DType::i32);
  value.tensor().data<int32_t>()[0] = here.tp + 1;
  groups.dp->all_reduce(value, ReduceOp::sum);
  EXPECT_EQ(value.tensor().data<int32_t>()[0], groups.dp->size() * (here.tp + 1));
}

}  // namespace
}  // namespace hai
