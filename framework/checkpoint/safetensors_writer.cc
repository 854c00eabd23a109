#include "framework/checkpoint/safetensors_writer.h"

#include <bit>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "framework/checkpoint/safetensors_dtype.h"
#include "framework/core/error.h"

namespace hai {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data and lengths are little-endian");

uint64_t byte_size(const SafetensorsLayoutEntry& tensor) {
  uint64_t numel = 1;
  for (int64_t dim : tensor.shape) numel *= static_cast<uint64_t>(dim);
  return numel * dtype_size(tensor.dtype);
}

std::string header_text(const std::vector<SafetensorsLayoutEntry>& tensors,
                        const std::map<std::string, std::string>& metadata, const std::string& path) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const SafetensorsLayoutEntry& tensor : tensors) {
    HAI_CHECK(tensor.name != "__metadata__" && names.insert(tensor.name).second, "{}: tensor name '{}' is reserved "
              "or repeated", path, tensor.name);
    uint64_t bytes = byte_size(tensor);
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

SafetensorsStreamWriter::SafetensorsStreamWriter(std::string path, const std::vector<SafetensorsLayoutEntry>& tensors,
                                                 const std::map<std::string, std::string>& metadata)
    : tensors_(tensors), header_(header_text(tensors_, metadata, path)), file_(std::move(path)) {
  uint64_t header_length = header_.size();
  file_.write(std::as_bytes(std::span<const uint64_t>(&header_length, 1)));
  file_.write(std::as_bytes(std::span<const char>(header_.data(), header_.size())));
}

void SafetensorsStreamWriter::write_next(std::span<const std::byte> bytes) {
  HAI_CHECK(next_ < tensors_.size(), "{}: more tensors written than the {} declared", file_.path(), tensors_.size());
  const SafetensorsLayoutEntry& tensor = tensors_[next_];
  HAI_CHECK(bytes.size() == byte_size(tensor), "{}: tensor '{}' has {} bytes, its shape and dtype need {}",
            file_.path(), tensor.name, bytes.size(), byte_size(tensor));
  file_.write(bytes);
  ++next_;
}

uint64_t SafetensorsStreamWriter::finish() {
  HAI_CHECK(next_ == tensors_.size(), "{}: {} of the {} declared tensors written", file_.path(), next_,
            tensors_.size());
  file_.finish();
  return file_.bytes_written();
}

uint64_t write_safetensors(const std::string& path, const std::vector<SafetensorsInput>& tensors,
                           const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsLayoutEntry> layout;
  for (const SafetensorsInput& tensor : tensors) layout.push_back({tensor.name, tensor.dtype, tensor.shape});
  SafetensorsStreamWriter writer(path, layout, metadata);
  for (const SafetensorsInput& tensor : tensors) writer.write_next(tensor.bytes);
  return writer.finish();
}

}  // namespace hai
