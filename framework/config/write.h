#pragma once
// Writing the effective config: every key of the schema, defaults filled in, as YAML (the run dir's config.yaml)
// or JSON (checkpoint manifests). parse_config_text(config_to_yaml(c)).config == c.

#include <string>

#include <nlohmann/json.hpp>

#include "framework/config/config.h"

namespace hai {

std::string config_to_yaml(const Config& config);

// Nested objects by section: {"model": {"moe": {"groups": 4, ...}, ...}, ...}.
nlohmann::json config_to_json(const Config& config);

// Writes config_to_yaml(config) to `path`, creating its directory. Throws hai::Error when it cannot.
void write_config_file(const Config& config, const std::string& path);

}  // namespace hai
