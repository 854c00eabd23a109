#include "framework/config/yaml_document.h"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace hai {
namespace {

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

void collect_key_lines(const YAML::Node& map, const std::string& parent, const std::string& source, KeyLines& lines) {
  std::set<std::string> seen;
  for (const auto& entry : map) {
    int line = entry.first.Mark().line + 1;
    if (!entry.first.IsScalar()) throw ConfigError(source, "keys must be plain names", line);
    std::string path = child_path(parent, entry.first.Scalar());
    if (!seen.insert(entry.first.Scalar()).second) throw ConfigError(path, "duplicate key", line);
    lines[path] = line;
    if (entry.second.IsMap()) collect_key_lines(entry.second, path, source, lines);
  }
}

YamlDocument parse_yaml(std::istream& input, const std::string& source) {
  YamlDocument document;
  try {
    document.root = YAML::Load(input);
  } catch (const YAML::ParserException& error) {
    std::optional<int> line;
    if (!error.mark.is_null()) line = error.mark.line + 1;
    throw ConfigError(source, "YAML syntax error: " + error.msg, line);
  }
  if (document.root.IsNull()) document.root = YAML::Node(YAML::NodeType::Map);
  if (!document.root.IsMap()) throw ConfigError(source, "expected a map of sections (model:, train:, ...)");
  collect_key_lines(document.root, "", source, document.lines);
  return document;
}

std::vector<std::string> split_key_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream stream(path);
  for (std::string part; std::getline(stream, part, '.');) parts.push_back(part);
  if (!path.empty() && path.back() == '.') parts.emplace_back();
  return parts;
}

void drop_lines_under(KeyLines& lines, const std::string& path) {
  for (auto entry = lines.begin(); entry != lines.end();) {
    bool under = entry->first == path || entry->first.starts_with(path + ".");
    entry = under ? lines.erase(entry) : std::next(entry);
  }
}

YAML::Node parse_override_value(const std::string& key_path, const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& error) {
    throw ConfigError(key_path, "--set value \"" + text + "\" is not valid YAML: " + error.msg);
  }
}

}  // namespace

YamlDocument load_yaml_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw ConfigError(path, "cannot open the config file");
  return parse_yaml(file, path);
}

YamlDocument load_yaml_text(const std::string& text, const std::string& source) {
  std::istringstream stream(text);
  return parse_yaml(stream, source);
}

void apply_override(YamlDocument& document, const std::string& assignment) {
  std::size_t equals = assignment.find('=');
  if (equals == std::string::npos) throw ConfigError("--set " + assignment, "expected KEY=VALUE");
  std::string key_path = assignment.substr(0, equals);
  std::vector<std::string> parts = split_key_path(key_path);
  for (const std::string& part : parts) {
    if (part.empty()) throw ConfigError("--set " + assignment, "the key path has an empty part");
  }
  if (parts.empty()) throw ConfigError("--set " + assignment, "expected KEY=VALUE");
  YAML::Node value = parse_override_value(key_path, assignment.substr(equals + 1));

  YAML::Node section = document.root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!section[parts[i]].IsMap()) section[parts[i]] = YAML::Node(YAML::NodeType::Map);
    section.reset(section[parts[i]]);
  }
  section[parts.back()] = value;
  drop_lines_under(document.lines, key_path);
}

}  // namespace hai
