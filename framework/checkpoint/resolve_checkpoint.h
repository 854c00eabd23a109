#pragma once
// Which checkpoint to resume from (config key checkpoint.resume).

#include <optional>
#include <string>
#include <vector>

namespace hai {

// The step directory named by <dir>/latest; nullopt when `dir` has no `latest`. Throws naming `latest` when it
// does not name a complete checkpoint.
std::optional<std::string> latest_checkpoint(const std::string& dir);

// resume == "none": nullopt. "auto": latest_checkpoint(dir). Anything else is a path: a step directory (holding
// manifest.json), or a checkpoint directory (holding `latest`); anything else there is an error.
std::optional<std::string> resolve_checkpoint(const std::string& dir, const std::string& resume);

// The checkpoints to resume from, in the order to try them: for "auto", the one `latest` names, then every other
// complete checkpoint of `dir`, newest first (a `latest` that names no complete checkpoint is warned about and
// skipped); for anything else what resolve_checkpoint gives (none or one). The caller falls back along the list
// when one fails to load (a corrupt file), so that a run recovers without a person.
std::vector<std::string> resume_candidates(const std::string& dir, const std::string& resume);

}  // namespace hai
