#pragma once
// The JSON header of a safetensors file, parsed and validated. A safetensors file is: an 8-byte little-endian
// header length N; N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}
// (padded with spaces); then the data, where each tensor's offsets are relative to the data's first byte.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/dtype.h"

namespace hai {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets relative to the start of the data
  uint64_t end = 0;

  uint64_t bytes() const { return end - begin; }
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;  // in data order
  std::map<std::string, std::string> metadata;
};

// The largest header accepted (the limit of the reference implementation).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// Parses `json` and checks it against a data section of `data_bytes`: known dtypes, non-negative dimensions,
// shape x dtype size == the offsets' span, and the tensors tile the data exactly (sorted by offset, no gap, no
// overlap, ending at data_bytes). Any fault is a hai::Error naming `path` and, where there is one, the tensor.
SafetensorsHeader parse_safetensors_header(std::string_view json, uint64_t data_bytes, const std::string& path);

}  // namespace hai
