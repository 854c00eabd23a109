#pragma once
// Topology: where this rank sits in the grid of docs/architecture.md "Parallel layout", and the sub-communicators the
// parallel parts talk through. world = pp * dp * tp; the rank order is, innermost first, tp, then dp, then pp:
//   rank = tp_rank + tp * (dp_rank + dp * pp_rank)
// A group is the set of ranks that differ in one coordinate only; it is made by splitting the world
// communicator with a color naming the other coordinates and a key giving the rank's place inside the group.
//
// Experts: the dp * tp ranks of a stage, numbered s = tp_rank + tp * dp_rank, form dp * tp / ep expert-parallel
// (EP) groups of ep consecutive ranks: EP rank s % ep, EP group s / ep. The ranks with the same EP rank form the
// expert-data-parallel (expert-DP) group, ranked by s / ep: they hold the same experts and reduce their gradients.
// At ep = 1 the EP group is the rank alone and the expert-DP group spans the stage (the DP group when tp = 1).
// The pipeline (PP) group: the pp ranks of one (dp, tp) position, ranked by pp coordinate: the stages a
// micro-batch flows through. The tensor-parallel (TP) group: the tp ranks of one (dp, pp) position, ranked by tp
// coordinate (parallel/tensor_parallel.h).

#include <memory>

#include "framework/comm/communicator.h"
#include "framework/config/config.h"

namespace hai {

struct GridShape {
  int dp = 1;
  int pp = 1;
  int tp = 1;
  int ep = 1;  // divides dp * tp

  int world() const { return dp * pp * tp; }
  int expert_dp() const { return dp * tp / ep; }
};

struct RankCoordinates {
  int dp = 0;
  int pp = 0;
  int tp = 0;
};

// The grid of a config whose parallel.dp is resolved (load_config does it); throws when ep does not divide dp * tp.
GridShape grid_shape(const ParallelConfig& parallel);

// A rank's place among the expert groups of its stage (see above).
struct ExpertCoordinates {
  int ep = 0;         // rank in the EP group: it holds the ep-th of the ep equal ranges of routed experts
  int ep_group = 0;   // which EP group of the stage
};
ExpertCoordinates expert_coordinates(const GridShape& grid, const RankCoordinates& coordinates);

// The coordinates of `rank` in the grid; throws hai::Error when rank is outside [0, world).
RankCoordinates rank_coordinates(const GridShape& grid, int rank);
// The inverse: the rank at `coordinates`.
int rank_at(const GridShape& grid, const RankCoordinates& coordinates);

struct ParallelGroups {
  std::unique_ptr<Communicator> dp;         // the ranks of this rank's (pp, tp) position, ranked by dp coordinate
  std::unique_ptr<Communicator> ep;         // this rank's EP group (ep ranks), ranked by EP rank
  std::unique_ptr<Communicator> expert_dp;  // the stage's ranks of this EP rank (dp * tp / ep), ranked by EP group
  std::unique_ptr<Communicator> pp;         // the ranks of this rank's (dp, tp) position, ranked by pp coordinate
  std::unique_ptr<Communicator> tp;         // the ranks of this rank's (dp, pp) position, ranked by tp coordinate
  // The pp x tp ranks of this rank's dp position, ranked by world rank: together they hold one replica of the model
  // (the gradient norm sums over them, then over the DP group).
  std::unique_ptr<Communicator> model_parallel;
};

// Splits `world` (whose size must equal grid.world()) into the groups of this rank. Every rank of `world` calls it.
ParallelGroups make_parallel_groups(Communicator& world, const GridShape& grid);

}  // namespace hai
