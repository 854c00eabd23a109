#include "framework/checkpoint/safetensors_header.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "framework/checkpoint/safetensors_dtype.h"
#include "framework/core/error.h"

namespace hai {
namespace {

using nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";

uint64_t unsigned_number(const json& value, const std::string& path, const std::string& name, const char* what) {
  if (!value.is_number_unsigned()) HAI_THROW("{}: tensor '{}': {} must be non-negative integers", path, name, what);
  return value.get<uint64_t>();
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& path) {
  if (!value.is_object()) HAI_THROW("{}: __metadata__ must be an object of strings", path);
  std::map<std::string, std::string> metadata;
  for (const auto& [key, text] : value.items()) {
    if (!text.is_string()) HAI_THROW("{}: __metadata__ '{}' is not a string", path, key);
    metadata.emplace(key, text.get<std::string>());
  }
  return metadata;
}

// The byte count of `shape` x `dtype`, or an error if it overflows 64 bits.
uint64_t shape_bytes(const std::vector<int64_t>& shape, DType dtype, const std::string& path, const std::string& name) {
  uint64_t bytes = dtype_size(dtype);
  for (int64_t dim : shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes)) {
      HAI_THROW("{}: tensor '{}': shape is too large", path, name);
    }
  }
  return bytes;
}

SafetensorsEntry parse_entry(const std::string& name, const json& value, const std::string& path) {
  if (!value.is_object()) HAI_THROW("{}: tensor '{}' is not an object", path, name);
  for (const auto& [key, unused] : value.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      HAI_THROW("{}: tensor '{}' has unknown field '{}'", path, name, key);
    }
  }
  if (!value.contains("dtype") || !value["dtype"].is_string()) HAI_THROW("{}: tensor '{}' has no dtype", path, name);
  if (!value.contains("shape") || !value["shape"].is_array()) HAI_THROW("{}: tensor '{}' has no shape", path, name);
  const json& offsets = value.contains("data_offsets") ? value["data_offsets"] : json();
  if (!offsets.is_array() || offsets.size() != 2) {
    HAI_THROW("{}: tensor '{}' needs data_offsets [begin, end]", path, name);
  }
  SafetensorsEntry entry;
  entry.name = name;
  std::string dtype_text = value["dtype"].get<std::string>();
  std::optional<DType> dtype = parse_safetensors_dtype(dtype_text);
  if (!dtype) HAI_THROW("{}: tensor '{}' has dtype '{}', which hai-train cannot read", path, name, dtype_text);
  entry.dtype = *dtype;
  for (const json& dim : value["shape"]) {
    uint64_t size = unsigned_number(dim, path, name, "shape dimensions");
    if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      HAI_THROW("{}: tensor '{}': dimension {} is too large", path, name, size);
    }
    entry.shape.push_back(static_cast<int64_t>(size));
  }
  entry.begin = unsigned_number(offsets[0], path, name, "data_offsets");
  entry.end = unsigned_number(offsets[1], path, name, "data_offsets");
  if (entry.end < entry.begin) HAI_THROW("{}: tensor '{}' ends before it begins", path, name);
  uint64_t expected = shape_bytes(entry.shape, entry.dtype, path, name);
  if (entry.bytes() != expected) {
    HAI_THROW("{}: tensor '{}' spans {} bytes but its shape and dtype need {}", path, name, entry.bytes(), expected);
  }
  return entry;
}

// The tensors, sorted by offset, must cover [0, data_bytes) with neither gaps nor overlaps.
void check_tiling(std::vector<SafetensorsEntry>& tensors, uint64_t data_bytes, const std::string& path) {
  std::sort(tensors.begin(), tensors.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t position = 0;
  for (const SafetensorsEntry& entry : tensors) {
    if (entry.begin < position) HAI_THROW("{}: tensor '{}' overlaps the tensor before it", path, entry.name);
    if (entry.begin > position) HAI_THROW("{}: a gap in the data before tensor '{}'", path, entry.name);
    if (entry.end > data_bytes) {
      HAI_THROW("{}: tensor '{}' ends at byte {} of {} data bytes (truncated file?)", path, entry.name, entry.end,
                data_bytes);
    }
    position = entry.end;
  }
  if (position != data_bytes) {
    HAI_THROW("{}: the tensors cover {} of the {} data bytes", path, position, data_bytes);
  }
}

SafetensorsHeader parse_document(const json& document, uint64_t data_bytes, const std::string& path) {
  if (!document.is_object()) HAI_THROW("{}: the header is not a JSON object", path);
  SafetensorsHeader header;
  for (const auto& [key, value] : document.items()) {
    if (key == kMetadataKey) {
      header.metadata = parse_metadata(value, path);
    } else {
      header.tensors.push_back(parse_entry(key, value, path));
    }
  }
  check_tiling(header.tensors, data_bytes, path);
  return header;
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view text, uint64_t data_bytes, const std::string& path) {
  if (text.empty() || text.front() != '{') HAI_THROW("{}: the header does not start with '{{'", path);
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) HAI_THROW("{}: the header is not valid JSON", path);
  try {
    return parse_document(document, data_bytes, path);
  } catch (const json::exception& error) {  // NOTE: defensive; every access above is type-checked first
    HAI_THROW("{}: malformed header: {}", path, error.what());
  }
}

}  // namespace hai
