// The groups of the job's grid: the DP group (dp = world / tp ranks sharing (pp, tp), ranked by dp coordinate),
// the EP groups (ep consecutive ranks of a stage), the expert-DP groups (the ranks of one EP rank) and the pipeline
// groups (the pp ranks of one (dp, tp) position, ranked by pp coordinate), the TP groups (the tp ranks of one (dp, pp)
// position) and the model-parallel groups (the pp x tp ranks of one dp coordinate).

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

// Sums `value` over a group.
int32_t group_sum(Communicator& group, int32_t value) {
  OwnedTensor tensor(Shape{1}, DType::i32);  // [1]
  tensor.tensor().data<int32_t>()[0] = value;
  group.all_reduce(tensor, ReduceOp::sum);
  return tensor.tensor().data<int32_t>()[0];
}

TEST_F(TopologyWorld, ExpertGroupsOfEveryEpThatDividesTheWorld) {
  for (int ep = 1; ep <= size(); ++ep) {
    if (size() % ep != 0) continue;
    ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size(), .ep = ep});
    EXPECT_EQ(groups.ep->size(), ep);
    EXPECT_EQ(groups.ep->rank(), rank() % ep);
    EXPECT_EQ(groups.expert_dp->size(), size() / ep);
    EXPECT_EQ(groups.expert_dp->rank(), rank() / ep);
    // The EP group is ranks [first, first + ep) with first = rank - rank % ep; the expert-DP group the ranks of
    // this rank's EP rank, rank % ep + k * ep.
    int first = rank() - rank() % ep;
    EXPECT_EQ(group_sum(*groups.ep, rank()), ep * first + ep * (ep - 1) / 2) << "ep " << ep;
    int expert_dp = size() / ep;
    EXPECT_EQ(group_sum(*groups.expert_dp, rank()), expert_dp * (rank() % ep) + ep * expert_dp * (expert_dp - 1) / 2)
        << "ep " << ep;
  }
}

TEST_F(TopologyWorld, PipelineGroupsOfEveryPpThatDividesTheWorld) {
  for (int pp = 1; pp <= size(); ++pp) {
    if (size() % pp != 0) continue;
    int dp = size() / pp;
    ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = dp, .pp = pp});
    EXPECT_EQ(groups.pp->size(), pp);
    EXPECT_EQ(groups.pp->rank(), rank() / dp) << "pp " << pp;
    EXPECT_EQ(groups.dp->size(), dp);
    // The pipeline group is the ranks dp_rank + k * dp: their sum is pp * dp_rank + dp * pp * (pp - 1) / 2.
    EXPECT_EQ(group_sum(*groups.pp, rank()), pp * (rank() % dp) + dp * pp * (pp - 1) / 2) << "pp " << pp;
  }
}

// tp 2 x pp 2 (x dp = world / 4): the TP group is the pair of consecutive ranks 2k, 2k + 1, ranked by tp
// coordinate; the model-parallel group is the pp x tp ranks of one dp coordinate.
TEST_F(TopologyWorld, TensorAndModelParallelGroups) {
  if (size() % 4 != 0) GTEST_SKIP() << "needs a multiple of 4 ranks";
  GridShape grid{.dp = size() / 4, .pp = 2, .tp = 2};
  ParallelGroups groups = make_parallel_groups(*world_, grid);
  RankCoordinates here = rank_coordinates(grid, rank());
  EXPECT_EQ(groups.tp->size(), 2);
  EXPECT_EQ(groups.tp->rank(), here.tp);
  EXPECT_EQ(group_sum(*groups.tp, rank()), 2 * (rank() - here.tp) + 1);
  EXPECT_EQ(groups.model_parallel->size(), 4);
  // The members share the dp coordinate: summing (dp + 1) gives 4 (dp + 1).
  EXPECT_EQ(group_sum(*groups.model_parallel, here.dp + 1), 4 * (here.dp + 1));
}

}  // namespace
}  // namespace hai
