#pragma once
// The whole config path of hai-train, on every rank before MPI starts: read the file, apply the --set overrides,
// validate for the world size, resolve the autos, refuse features that do not exist yet.

#include <string>
#include <vector>

#include "framework/config/config.h"

namespace hai {

// Whether features that do not exist yet are refused (training) or only planned for (--dry-run).
enum class FeatureCheck { require_supported, plan_only };

// Throws ConfigError on any problem. The returned config has dp and micro_batches resolved.
Config load_config(const std::string& path, const std::vector<std::string>& overrides, int world_size,
                   FeatureCheck features = FeatureCheck::require_supported);

}  // namespace hai
