#include "framework/config/config_error.h"

#include <utility>

namespace hai {
namespace {

std::string printed_form(const std::string& key_path, const std::string& problem, std::optional<int> yaml_line) {
  std::string text = fmt::format("config error: {}: {}", key_path, problem);
  if (yaml_line) text += fmt::format(" (line {})", *yaml_line);
  return text;
}

}  // namespace

ConfigError::ConfigError(std::string key_path, std::string problem, std::optional<int> yaml_line)
    : Error(printed_form(key_path, problem, yaml_line), __FILE__, __LINE__),
      key_path_(std::move(key_path)),
      problem_(std::move(problem)),
      yaml_line_(yaml_line),
      printed_(printed_form(key_path_, problem_, yaml_line_)) {}

void throw_config_error(const KeyLines& lines, const std::string& key_path, const std::string& problem) {
  auto found = lines.find(key_path);
  if (found == lines.end()) throw ConfigError(key_path, problem);
  throw ConfigError(key_path, problem, found->second);
}

}  // namespace hai
