#pragma once
// Committing a checkpoint, on rank 0 once every rank's CheckpointWriter::write_rank_files() has succeeded:
//   1. merge the ranks' entries into the manifest (checks that every tensor is covered exactly once);
//   2. check every listed file is in <dir>/step_N.tmp/ with its size, and delete anything else there (left over
//      from an earlier, interrupted attempt at the same step);
//   3. write manifest.json, fsync it and the directory; rename step_N.tmp to step_N (an existing step_N is
//      replaced) and fsync <dir>;
//   4. write <dir>/latest.tmp ("step_N\n"), fsync, rename it over <dir>/latest, fsync <dir>;
//   5. remove the step_M.tmp directories of earlier steps (M <= N) and prune complete checkpoints beyond `keep`
//      (0 = keep all).
// A crash before 4 leaves `latest` naming the previous checkpoint; readers never look at .tmp directories.

#include <cstdint>
#include <string>
#include <vector>

#include "framework/checkpoint/checkpoint_manifest.h"

namespace hai {

// `rank_entries[r]` is rank r's write_rank_files() result. Returns the committed step directory.
std::string commit_checkpoint(const std::string& dir, const CheckpointState& state,
                              const std::vector<std::string>& rank_entries, int64_t keep);

}  // namespace hai
