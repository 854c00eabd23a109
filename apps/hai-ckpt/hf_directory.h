#pragma once
// Reading an HF safetensors directory: `model.safetensors.index.json` ({metadata, weight_map: name -> file}) and
// the shards it names, or, without an index, every `*.safetensors` file in the directory. Only the headers are
// read up front; tensor bytes are read one tensor at a time.

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/checkpoint/safetensors_reader.h"
#include "framework/tensor/tensor.h"

namespace hai {

inline constexpr std::string_view kHfIndexFileName = "model.safetensors.index.json";

class HfDirectory {
 public:
  // Throws hai::Error naming the file for a bad index, a shard that is missing or invalid, a tensor that the
  // index places in another file than the one holding it, or a tensor held twice.
  explicit HfDirectory(std::string dir);

  const std::string& path() const { return dir_; }
  // Every tensor name, sorted.
  std::vector<std::string> names() const;
  // nullptr when there is no such tensor.
  const SafetensorsEntry* find(std::string_view name) const;
  // The tensor as stored (its dtype and shape), into a new CPU tensor.
  OwnedTensor read(std::string_view name) const;
  // "<dir>/<shard>: tensor '<name>'", for messages.
  std::string where(std::string_view name) const;

 private:
  struct Location {
    const SafetensorsFile* file;
    const SafetensorsEntry* entry;
  };
  void add_file(const std::string& file_name);
  const Location& locate(std::string_view name) const;

  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Location, std::less<>> tensors_;
};

}  // namespace hai
