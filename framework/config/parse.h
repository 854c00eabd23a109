#pragma once
// Reading a Config from YAML: the file, then the --set overrides in order (the later wins), then the keys into the
// typed structs. Keys not given keep their defaults. No cross-key validation here (validate.h does that).

#include <string>
#include <vector>

#include "framework/config/config.h"
#include "framework/config/config_error.h"

namespace hai {

struct ParsedConfig {
  Config config;
  KeyLines lines;  // where each key came from in the file, for validation errors
};

// Throws ConfigError for syntax errors, unknown keys (with "did you mean ..."), wrong types and bad overrides.
ParsedConfig parse_config_file(const std::string& path, const std::vector<std::string>& overrides = {});
ParsedConfig parse_config_text(const std::string& text, const std::vector<std::string>& overrides = {},
                               const std::string& source = "<config>");

}  // namespace hai
