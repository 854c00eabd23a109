#pragma once
// Topology: where this rank sits in the grid of DESIGN.md "Parallel layout", and the sub-communicators the
// parallel parts talk through. world = pp * dp * tp; the rank order is, innermost first, tp, then dp, then pp:
//   rank = tp_rank + tp * (dp_rank + dp * pp_rank)
// A group is the set of ranks that differ in one coordinate only; it is made by splitting the world
// communicator with a color naming the other coordinates and a key giving the rank's place inside the group.
// Only the groups in use are built (DP today); EP, expert-DP, PP and TP groups are added the same way.

#include <memory>

#include "framework/comm/communicator.h"
#include "framework/config/config.h"

namespace hai {

struct GridShape {
  int dp = 1;
  int pp = 1;
  int tp = 1;

  int world() const { return dp * pp * tp; }
};

struct RankCoordinates {
  int dp = 0;
  int pp = 0;
  int tp = 0;
};

// The grid of a config whose parallel.dp is resolved (load_config does it).
GridShape grid_shape(const ParallelConfig& parallel);

// The coordinates of `rank` in the grid; throws hai::Error when rank is outside [0, world).
RankCoordinates rank_coordinates(const GridShape& grid, int rank);
// The inverse: the rank at `coordinates`.
int rank_at(const GridShape& grid, const RankCoordinates& coordinates);

struct ParallelGroups {
  std::unique_ptr<Communicator> dp;  // the ranks of this rank's (pp, tp) position, ranked by dp coordinate
};

// Splits `world` (whose size must equal grid.world()) into the groups of this rank. Every rank of `world` calls it.
ParallelGroups make_parallel_groups(Communicator& world, const GridShape& grid);

}  // namespace hai
