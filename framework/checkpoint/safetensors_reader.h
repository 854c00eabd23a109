#pragma once
// SafetensorsFile: an open safetensors file whose header has been read and validated (safetensors_header.h);
// tensor bytes are read on demand with positioned reads, so a large file is never loaded whole.

#include <cstddef>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "framework/checkpoint/file_io.h"
#include "framework/checkpoint/safetensors_header.h"

namespace hai {

class SafetensorsFile {
 public:
  // Throws hai::Error naming the path (and tensor) for any fault: a short file, a header length beyond the file,
  // invalid JSON, an unknown dtype, offsets that do not match the shapes or do not tile the data.
  explicit SafetensorsFile(std::string file_path);

  const std::string& path() const { return file_.path(); }
  uint64_t file_size() const { return file_.size(); }
  const std::vector<SafetensorsEntry>& tensors() const { return header_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  // nullptr when the file has no tensor of that name.
  const SafetensorsEntry* find(std::string_view name) const;
  // The stored bytes of `entry` (one of tensors()) into `out`, which must be entry.bytes() long.
  void read(const SafetensorsEntry& entry, std::span<std::byte> out) const;

 private:
  InputFile file_;
  uint64_t data_start_ = 0;
  SafetensorsHeader header_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in header_.tensors
};

}  // namespace hai
