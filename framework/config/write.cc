#include "framework/config/write.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "framework/config/schema.h"
#include "framework/core/error.h"

namespace hai {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream stream(path);
  for (std::string part; std::getline(stream, part, '.');) parts.push_back(part);
  return parts;
}

}  // namespace

std::string config_to_yaml(const Config& config) {
  std::string text = "# hai-train effective config: every key, defaults filled in\n";
  std::vector<std::string> open_sections;
  for (const ConfigKey& key : config_schema()) {
    std::vector<std::string> parts = split_path(key.path);
    std::vector<std::string> sections(parts.begin(), parts.end() - 1);
    std::size_t shared = 0;
    while (shared < sections.size() && shared < open_sections.size() && sections[shared] == open_sections[shared]) {
      ++shared;
    }
    for (std::size_t depth = shared; depth < sections.size(); ++depth) {
      text += std::string(2 * depth, ' ') + sections[depth] + ":\n";
    }
    text += std::string(2 * sections.size(), ' ') + parts.back() + ": " + key.text(config) + "\n";
    open_sections = sections;
  }
  return text;
}

nlohmann::json config_to_json(const Config& config) {
  nlohmann::json json = nlohmann::json::object();
  for (const ConfigKey& key : config_schema()) {
    std::string pointer;
    for (const std::string& part : split_path(key.path)) pointer += "/" + part;
    json[nlohmann::json::json_pointer(pointer)] = key.json(config);
  }
  return json;
}

void write_config_file(const Config& config, const std::string& path) {
  std::filesystem::path file(path);
  std::error_code error;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), error);
  if (error) HAI_THROW("cannot create the directory {}: {}", file.parent_path().string(), error.message());
  std::ofstream output(file);
  output << config_to_yaml(config);
  output.close();
  if (!output) HAI_THROW("cannot write the config to {}", path);
}

}  // namespace hai
