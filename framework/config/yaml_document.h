#pragma once
// A config file as a YAML tree plus the line of every key, with --set overrides applied to the tree.

#include <string>

#include <yaml-cpp/yaml.h>

#include "framework/config/config_error.h"

namespace hai {

struct YamlDocument {
  YAML::Node root;  // a map (an empty file is an empty map)
  KeyLines lines;   // key path -> 1-based line, for keys that came from the file
};

// Throws ConfigError(source, ...) for an unreadable file, a YAML syntax error (with its line), a top level that is
// not a map, a duplicate key or a key that is not a plain name.
YamlDocument load_yaml_file(const std::string& path);
YamlDocument load_yaml_text(const std::string& text, const std::string& source);

// assignment: "a.b.c=value", the value read as a YAML scalar or flow node ("[0.9, 0.95]", "{factor: 40}").
// Replaces the node at a.b.c (creating sections on the way) and drops the lines of what it replaced.
void apply_override(YamlDocument& document, const std::string& assignment);

}  // namespace hai
