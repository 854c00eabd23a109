#include "framework/checkpoint/safetensors_reader.h"

#include <bit>
#include <cstring>
#include <utility>

#include "framework/core/error.h"

namespace hai {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors lengths are little-endian");

constexpr uint64_t kLengthBytes = 8;

}  // namespace

SafetensorsFile::SafetensorsFile(std::string file_path) : file_(std::move(file_path)) {
  if (file_.size() < kLengthBytes) HAI_THROW("{}: {} bytes is too short for a safetensors file", path(), file_size());
  uint64_t header_length = 0;
  file_.read_at(0, std::as_writable_bytes(std::span<uint64_t>(&header_length, 1)));
  if (header_length > kMaxSafetensorsHeaderBytes || header_length > file_size() - kLengthBytes) {
    HAI_THROW("{}: header length {} does not fit the file ({} bytes)", path(), header_length, file_size());
  }
  std::string text(header_length, '\0');
  file_.read_at(kLengthBytes, std::as_writable_bytes(std::span<char>(text.data(), text.size())));
  data_start_ = kLengthBytes + header_length;
  header_ = parse_safetensors_header(text, file_size() - data_start_, path());
  for (size_t i = 0; i < header_.tensors.size(); ++i) index_.emplace(header_.tensors[i].name, i);
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  auto found = index_.find(name);
  return found == index_.end() ? nullptr : &header_.tensors[found->second];
}

void SafetensorsFile::read(const SafetensorsEntry& entry, std::span<std::byte> out) const {
  HAI_CHECK(out.size() == entry.bytes(), "{}: tensor '{}' has {} bytes, the buffer {}", path(), entry.name,
            entry.bytes(), out.size());
  file_.read_at(data_start_ + entry.begin, out);
}

}  // namespace hai
