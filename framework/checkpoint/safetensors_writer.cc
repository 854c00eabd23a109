#include "framework/checkpoint/safetensors_writer.h"

#include <bit>
#include <set>

#include <nlohmann/json.hpp>

#include "framework/checkpoint/file_io.h"
#include "framework/checkpoint/safetensors_dtype.h"
#include "framework/core/error.h"

namespace hai {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data and lengths are little-endian");

uint64_t numel_of(const std::vector<int64_t>& shape) {
  uint64_t numel = 1;
  for (int64_t dim : shape) numel *= static_cast<uint64_t>(dim);
  return numel;
}

std::string header_text(const std::vector<SafetensorsInput>& tensors,
                        const std::map<std::string, std::string>& metadata, const std::string& path) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const SafetensorsInput& tensor : tensors) {
    HAI_CHECK(tensor.name != "__metadata__" && names.insert(tensor.name).second, "{}: tensor name '{}' is reserved "
              "or repeated", path, tensor.name);
    uint64_t bytes = numel_of(tensor.shape) * dtype_size(tensor.dtype);
    HAI_CHECK(tensor.bytes.size() == bytes, "{}: tensor '{}' has {} bytes, its shape and dtype need {}", path,
              tensor.name, tensor.bytes.size(), bytes);
    header[tensor.name] = {{"dtype", safetensors_dtype_name(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace

uint64_t write_safetensors(const std::string& path, const std::vector<SafetensorsInput>& tensors,
                           const std::map<std::string, std::string>& metadata) {
  std::string header = header_text(tensors, metadata, path);
  uint64_t header_length = header.size();
  OutputFile file(path);
  file.write(std::as_bytes(std::span<const uint64_t>(&header_length, 1)));
  file.write(std::as_bytes(std::span<const char>(header.data(), header.size())));
  for (const SafetensorsInput& tensor : tensors) file.write(tensor.bytes);
  file.finish();
  return file.bytes_written();
}

}  // namespace hai
