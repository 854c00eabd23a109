#include "apps/hai-ckpt/hf_directory.h"

#include <filesystem>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "framework/checkpoint/file_io.h"
#include "framework/core/error.h"

namespace hai {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxIndexBytes = 1ull << 30;

// The shard of every tensor the index names: {name: file}.
std::map<std::string, std::string> read_weight_map(const std::string& path) {
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(read_whole_file(path, kMaxIndexBytes));
    return index.at("weight_map").get<std::map<std::string, std::string>>();
  } catch (const nlohmann::json::exception& error) {
    HAI_THROW("{}: not an index with a weight_map of names to files: {}", path, error.what());
  }
}

std::vector<std::string> safetensors_files_in(const std::string& dir) {
  std::vector<std::string> files;
  for (const std::string& name : list_directory(dir)) {
    if (name.ends_with(".safetensors")) files.push_back(name);
  }
  if (files.empty()) HAI_THROW("{} has neither {} nor any .safetensors file", dir, kHfIndexFileName);
  return files;
}

}  // namespace

HfDirectory::HfDirectory(std::string dir) : dir_(std::move(dir)) {
  std::string index_path = (fs::path(dir_) / kHfIndexFileName).string();
  if (!fs::exists(index_path)) {
    for (const std::string& file : safetensors_files_in(dir_)) add_file(file);
    return;
  }
  std::map<std::string, std::string> weight_map = read_weight_map(index_path);
  std::set<std::string> shards;
  for (const auto& [name, file] : weight_map) shards.insert(file);
  for (const std::string& file : shards) add_file(file);
  for (const auto& [name, file] : weight_map) {
    auto found = tensors_.find(name);
    if (found == tensors_.end() || found->second.file->path() != (fs::path(dir_) / file).string()) {
      HAI_THROW("{}: tensor '{}' is not in {}, where the index places it", index_path, name, file);
    }
  }
  if (tensors_.size() != weight_map.size()) {
    HAI_THROW("{}: the shards hold {} tensors, the index names {}", index_path, tensors_.size(), weight_map.size());
  }
}

void HfDirectory::add_file(const std::string& file_name) {
  HAI_CHECK(fs::path(file_name).filename() == file_name, "{}: shard name '{}' is not a file in the directory", dir_,
            file_name);
  files_.push_back(std::make_unique<SafetensorsFile>((fs::path(dir_) / file_name).string()));
  const SafetensorsFile& file = *files_.back();
  for (const SafetensorsEntry& entry : file.tensors()) {
    auto [where, added] = tensors_.emplace(entry.name, Location{&file, &entry});
    if (!added) HAI_THROW("tensor '{}' is in both {} and {}", entry.name, where->second.file->path(), file.path());
  }
}

std::vector<std::string> HfDirectory::names() const {
  std::vector<std::string> names;
  for (const auto& [name, location] : tensors_) names.push_back(name);
  return names;
}

const SafetensorsEntry* HfDirectory::find(std::string_view name) const {
  auto found = tensors_.find(name);
  return found == tensors_.end() ? nullptr : found->second.entry;
}

const HfDirectory::Location& HfDirectory::locate(std::string_view name) const {
  auto found = tensors_.find(name);
  if (found == tensors_.end()) HAI_THROW("{}: no tensor '{}'", dir_, name);
  return found->second;
}

OwnedTensor HfDirectory::read(std::string_view name) const {
  const Location& location = locate(name);
  OwnedTensor tensor(Shape(location.entry->shape), location.entry->dtype);
  location.file->read(*location.entry, {static_cast<std::byte*>(tensor.tensor().raw()), tensor.tensor().bytes()});
  return tensor;
}

std::string HfDirectory::where(std::string_view name) const {
  return fmt::format("{}: tensor '{}'", locate(name).file->path(), name);
}

}  // namespace hai
