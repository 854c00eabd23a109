#include "parallel/topology.h"

#include "framework/core/error.h"

namespace hai {
namespace {

// The group of ranks differing only in the dp coordinate: the color names (pp, tp), the key is dp.
std::unique_ptr<Communicator> split_dp_group(Communicator& world, const GridShape& grid,
                                             const RankCoordinates& here) {
  int color = here.pp * grid.tp + here.tp;
  return world.split(color, here.dp);
}

}  // namespace

GridShape grid_shape(const ParallelConfig& parallel) {
  HAI_CHECK(parallel.dp.has_value(), "parallel.dp must be resolved before the grid is built");
  return {.dp = static_cast<int>(*parallel.dp), .pp = static_cast<int>(parallel.pp),
          .tp = static_cast<int>(parallel.tp)};
}

RankCoordinates rank_coordinates(const GridShape& grid, int rank) {
  HAI_CHECK(rank >= 0 && rank < grid.world(), "rank {} is outside the grid of {} ranks (dp {} x pp {} x tp {})",
            rank, grid.world(), grid.dp, grid.pp, grid.tp);
  return {.dp = rank / grid.tp % grid.dp, .pp = rank / (grid.tp * grid.dp), .tp = rank % grid.tp};
}

int rank_at(const GridShape& grid, const RankCoordinates& coordinates) {
  return coordinates.tp + grid.tp * (coordinates.dp + grid.dp * coordinates.pp);
}

ParallelGroups make_parallel_groups(Communicator& world, const GridShape& grid) {
  HAI_CHECK(world.size() == grid.world(), "the world has {} ranks, the grid dp {} x pp {} x tp {} needs {}",
            world.size(), grid.dp, grid.pp, grid.tp, grid.world());
  RankCoordinates here = rank_coordinates(grid, world.rank());
  ParallelGroups groups;
  groups.dp = split_dp_group(world, grid, here);
  return groups;
}

}  // namespace hai
