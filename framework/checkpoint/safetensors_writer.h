#pragma once
// Writes a safetensors file: header padded with spaces to a multiple of 8 bytes (so the data starts aligned), the
// tensors back to back in the order given, then fsync.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "framework/core/dtype.h"

namespace hai {

struct SafetensorsInput {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;  // row-major, little-endian; numel(shape) x dtype size
};

// Returns the size of the file written. Names must be unique and not "__metadata__".
uint64_t write_safetensors(const std::string& path, const std::vector<SafetensorsInput>& tensors,
                           const std::map<std::string, std::string>& metadata);

}  // namespace hai
