#pragma once
// Opening a hai-train checkpoint named on the command line, and the config it was written with.

#include <cstdint>
#include <string>

#include "framework/checkpoint/checkpoint_manifest.h"
#include "framework/config/config.h"

namespace hai {

// `path` is a step directory (with manifest.json) or a checkpoint directory (with `latest`): the step directory.
// Throws hai::Error naming `path` otherwise.
std::string checkpoint_step_dir(const std::string& path);

// The effective config recorded in the manifest (config_to_json). Throws hai::Error naming `what` (the
// checkpoint) when it does not parse.
Config checkpoint_config(const CheckpointState& state, const std::string& what);

// The CRC32C of the recorded config's compact JSON (keys sorted): equal digests, equal configs.
uint32_t config_digest(const CheckpointState& state);

}  // namespace hai
