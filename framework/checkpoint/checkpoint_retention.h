#pragma once
// Housekeeping of a checkpoint directory: listing complete checkpoints, removing unfinished ones, pruning old ones.

#include <cstdint>
#include <string>
#include <vector>

namespace hai {

// The steps of the complete checkpoints in `dir` (step_N directories holding a manifest), ascending.
std::vector<int64_t> list_checkpoint_steps(const std::string& dir);

// Removes the step_M.tmp (and step_M.replaced.tmp) entries of `dir` with M <= up_to_step: writes that never
// committed. NOTE: later steps are left alone: other ranks may already be writing the next checkpoint while rank
// 0 commits this one.
void remove_unfinished_checkpoints(const std::string& dir, int64_t up_to_step);

// Keeps the checkpoint of `newest_step` and the keep - 1 highest other steps, and deletes the other complete
// checkpoints; keep == 0 keeps all.
void prune_checkpoints(const std::string& dir, int64_t keep, int64_t newest_step);

}  // namespace hai
