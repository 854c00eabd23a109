#pragma once
// hai::ConfigError: a bad config. what() is the printed form users see:
//   config error: <key path>: <problem> (line N)
// where the line (1-based) is given only when the key came from the YAML file.

#include <map>
#include <optional>
#include <string>

#include "framework/core/error.h"

namespace hai {

class ConfigError : public Error {
 public:
  ConfigError(std::string key_path, std::string problem, std::optional<int> yaml_line = std::nullopt);

  const char* what() const noexcept override { return printed_.c_str(); }
  const std::string& key_path() const { return key_path_; }
  const std::string& problem() const { return problem_; }
  std::optional<int> yaml_line() const { return yaml_line_; }

 private:
  std::string key_path_;
  std::string problem_;
  std::optional<int> yaml_line_;
  std::string printed_;
};

// The 1-based YAML line of every key path read from the config file ("model.moe.groups" -> 12). Keys set by
// --set overrides have no line.
using KeyLines = std::map<std::string, int>;

// Throws ConfigError(key_path, problem) with the key's line from `lines` when it has one.
[[noreturn]] void throw_config_error(const KeyLines& lines, const std::string& key_path, const std::string& problem);

}  // namespace hai
