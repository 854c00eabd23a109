#pragma once
// The config schema: one row per key, in the order the effective config and docs/config.md list them. This one
// table drives parsing (read), the per-key validation (check), the effective config (text, json) and the docs
// (type, rule, doc, and the default: the key's text in a default-constructed Config).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "framework/config/config.h"
#include "framework/config/config_error.h"

namespace hai {

struct ConfigKey {
  std::string path;  // "model.moe.groups": the YAML sections, then the key
  std::string type;  // "int", "float", "bool", "string", "int | auto", "1f1b | dualpipe | dualpipev", ...
  std::string rule;  // the per-key constraint ("> 0", "in [0, 1)"), empty when any value of the type is valid
  std::string doc;   // one line for docs/config.md
  std::function<void(Config&, const YAML::Node&, const KeyLines&)> read;  // throws ConfigError on a wrong type
  std::function<std::string(const Config&)> text;                         // the value as YAML text
  std::function<nlohmann::json(const Config&)> json;
  std::function<std::optional<std::string>(const Config&)> check;  // the rule's violation message, if violated
};

const std::vector<ConfigKey>& config_schema();

// The key with this path, or nullptr.
const ConfigKey* find_config_key(const std::string& path);

// Whether `path` names a section ("model", "model.rope.yarn") of the schema.
bool is_config_section(const std::string& path);

}  // namespace hai
