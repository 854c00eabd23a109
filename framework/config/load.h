#pragma once
// The whole config path of hai-train, on every rank before MPI starts: read the file, apply the --set overrides,
// validate for the world size, resolve the autos, refuse features that do not exist yet.

#include <string>
#include <vector>

#include "framework/config/config.h"

namespace hai {

// Throws ConfigError on any problem. The returned config has dp and micro_batches resolved.
Config load_config(const std::string& path, const std::vector<std::string>& overrides, int world_size);

}  // namespace hai
