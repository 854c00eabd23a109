#include "framework/config/parse.h"

#include <algorithm>

#include "framework/config/closest_key.h"
#include "framework/config/schema.h"
#include "framework/config/value_codec.h"
#include "framework/config/yaml_document.h"

namespace hai {
namespace {

// Every key path and every section path ("model", "model.rope", ...).
std::vector<std::string> known_paths() {
  std::vector<std::string> paths;
  for (const ConfigKey& key : config_schema()) {
    for (std::size_t dot = key.path.find('.'); dot != std::string::npos; dot = key.path.find('.', dot + 1)) {
      std::string section = key.path.substr(0, dot);
      if (std::find(paths.begin(), paths.end(), section) == paths.end()) paths.push_back(section);
    }
    paths.push_back(key.path);
  }
  return paths;
}

[[noreturn]] void throw_unknown_key(const std::string& path, const KeyLines& lines) {
  std::optional<std::string> suggestion = closest_key(path, known_paths());
  throw_config_error(lines, path, suggestion ? "unknown key; did you mean " + *suggestion + "?" : "unknown key");
}

void read_section(Config& config, const YAML::Node& section, const std::string& parent, const KeyLines& lines) {
  for (const auto& entry : section) {
    std::string path = parent.empty() ? entry.first.Scalar() : parent + "." + entry.first.Scalar();
    if (const ConfigKey* key = find_config_key(path)) {
      key->read(config, entry.second, lines);
    } else if (!is_config_section(path)) {
      throw_unknown_key(path, lines);
    } else if (entry.second.IsMap()) {
      read_section(config, entry.second, path, lines);
    } else if (!entry.second.IsNull()) {
      throw_config_error(lines, path, "expected a section of keys (got " + describe_node(entry.second) + ")");
    }
  }
}

ParsedConfig parse_document(YamlDocument document, const std::vector<std::string>& overrides) {
  for (const std::string& assignment : overrides) apply_override(document, assignment);
  ParsedConfig parsed;
  parsed.lines = document.lines;
  read_section(parsed.config, document.root, "", parsed.lines);
  return parsed;
}

}  // namespace

ParsedConfig parse_config_file(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_document(load_yaml_file(path), overrides);
}

ParsedConfig parse_config_text(const std::string& text, const std::vector<std::string>& overrides,
                               const std::string& source) {
  return parse_document(load_yaml_text(text, source), overrides);
}

}  // namespace hai
