#pragma once
// Helpers for the config tests: parse + validate YAML text, and catch the first ConfigError.

#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "framework/config/parse.h"
#include "framework/config/validate.h"

namespace hai::testing {

// The repository root, for configs/ and docs/ (tests/CMakeLists.txt defines it).
inline std::string source_path(const std::string& relative) { return std::string(HAI_SOURCE_DIR) + "/" + relative; }

inline std::string read_text_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Parses `yaml` as the file "test.yaml" with `overrides`, then validates it for `world_size` ranks.
inline Config load_text(const std::string& yaml, int world_size = 1, const std::vector<std::string>& overrides = {}) {
  ParsedConfig parsed = parse_config_text(yaml, overrides, "test.yaml");
  validate(parsed.config, world_size, parsed.lines);
  return parsed.config;
}

// The ConfigError load_text throws, or nothing (a test failure) when it accepts the config.
inline std::optional<ConfigError> config_error_of(const std::string& yaml, int world_size = 1,
                                                  const std::vector<std::string>& overrides = {}) {
  try {
    load_text(yaml, world_size, overrides);
  } catch (const ConfigError& error) {
    return error;
  }
  ADD_FAILURE() << "accepted:\n" << yaml;
  return std::nullopt;
}

}  // namespace hai::testing
