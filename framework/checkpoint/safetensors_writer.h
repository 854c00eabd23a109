#pragma once
// Writes safetensors files: header padded with spaces to a multiple of 8 bytes (so the data starts aligned), the
// tensors back to back in the order given, then fsync. Either all at once (write_safetensors) or one tensor at a
// time (SafetensorsStreamWriter), so that a large file never needs all its tensors in memory.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "framework/checkpoint/file_io.h"
#include "framework/core/dtype.h"

namespace hai {

// A tensor of a file being written: what the header says about it.
struct SafetensorsLayoutEntry {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
};

struct SafetensorsInput {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;  // row-major, little-endian; numel(shape) x dtype size
};

// Writes the header of every declared tensor on construction; then each tensor's bytes follow in the declared
// order. Names must be unique and not "__metadata__" (checked before the file is created).
class SafetensorsStreamWriter {
 public:
  SafetensorsStreamWriter(std::string path, const std::vector<SafetensorsLayoutEntry>& tensors,
                          const std::map<std::string, std::string>& metadata);

  // The next declared tensor's bytes (row-major, little-endian; numel(shape) x dtype size).
  void write_next(std::span<const std::byte> bytes);
  // Checks that every declared tensor was written, fsyncs and closes the file; returns its size.
  uint64_t finish();

 private:
  std::vector<SafetensorsLayoutEntry> tensors_;
  std::string header_;  // the JSON header, padded
  OutputFile file_;     // after header_: created once the header is known to be valid
  size_t next_ = 0;
};

// Returns the size of the file written. Names must be unique and not "__metadata__".
uint64_t write_safetensors(const std::string& path, const std::vector<SafetensorsInput>& tensors,
                           const std::map<std::string, std::string>& metadata);

}  // namespace hai
