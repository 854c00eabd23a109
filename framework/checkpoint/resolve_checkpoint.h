#pragma once
// Which checkpoint to resume from (config key checkpoint.resume).

#include <optional>
#include <string>

namespace hai {

// The step directory named by <dir>/latest; nullopt when `dir` has no `latest`. Throws naming `latest` when it
// does not name a complete checkpoint.
std::optional<std::string> latest_checkpoint(const std::string& dir);

// resume == "none": nullopt. "auto": latest_checkpoint(dir). Anything else is a path: a step directory (holding
// manifest.json), or a checkpoint directory (holding `latest`); anything else there is an error.
std::optional<std::string> resolve_checkpoint(const std::string& dir, const std::string& resume);

}  // namespace hai
