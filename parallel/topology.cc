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

// The EP group: the color names (pp, EP group), the key is the EP rank.
std::unique_ptr<Communicator> split_ep_group(Communicator& world, const GridShape& grid,
                                             const RankCoordinates& here) {
  ExpertCoordinates expert = expert_coordinates(grid, here);
  int groups_per_stage = grid.expert_dp();
  return world.split(here.pp * groups_per_stage + expert.ep_group, expert.ep);
}

// The expert-DP group: the color names (pp, EP rank), the key is the EP group.
std::unique_ptr<Communicator> split_expert_dp_group(Communicator& world, const GridShape& grid,
                                                    const RankCoordinates& here) {
  ExpertCoordinates expert = expert_coordinates(grid, here);
  return world.split(here.pp * grid.ep + expert.ep, expert.ep_group);
}

// The pipeline group: the color names (dp, tp), the key is pp.
std::unique_ptr<Communicator> split_pipeline_group(Communicator& world, const GridShape& grid,
                                                   const RankCoordinates& here) {
  return world.split(here.dp * grid.tp + here.tp, here.pp);
}

// The tensor-parallel group: the color names (pp, dp), the key is tp.
std::unique_ptr<Communicator> split_tensor_group(Communicator& world, const RankCoordinates& here,
                                                 const GridShape& grid) {
  return world.split(here.pp * grid.dp + here.dp, here.tp);
}

}  // namespace

GridShape grid_shape(const ParallelConfig& parallel) {
  HAI_CHECK(parallel.dp.has_value(), "parallel.dp must be resolved before the grid is built");
  GridShape grid{.dp = static_cast<int>(*parallel.dp), .pp = static_cast<int>(parallel.pp),
                 .tp = static_cast<int>(parallel.tp), .ep = static_cast<int>(parallel.ep)};
  HAI_CHECK(grid.ep > 0 && grid.dp * grid.tp % grid.ep == 0, "parallel.ep = {} must divide dp x tp = {} x {}",
            grid.ep, grid.dp, grid.tp);
  return grid;
}

ExpertCoordinates expert_coordinates(const GridShape& grid, const RankCoordinates& coordinates) {
  int stage_rank = coordinates.tp + grid.tp * coordinates.dp;
  return {.ep = stage_rank % grid.ep, .ep_group = stage_rank / grid.ep};
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
  HAI_CHECK(grid.ep > 0 && grid.dp * grid.tp % grid.ep == 0, "ep {} must divide dp {} x tp {}", grid.ep, grid.dp,
            grid.tp);
  groups.dp = split_dp_group(world, grid, here);
  groups.ep = split_ep_group(world, grid, here);
  groups.expert_dp = split_expert_dp_group(world, grid, here);
  groups.pp = split_pipeline_group(world, grid, here);
  groups.tp = split_tensor_group(world, here, grid);
  groups.model_parallel = world.split(here.dp, world.rank());
  return groups;
}

}  // namespace hai
