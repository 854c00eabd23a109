#include "framework/checkpoint/checkpoint_reader.h"

#include <filesystem>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "framework/checkpoint/crc32c.h"
#include "framework/checkpoint/file_io.h"
#include "framework/checkpoint/safetensors_dtype.h"
#include "framework/core/error.h"

namespace hai {
namespace {

// A manifest lists every tensor: even a 671B model's stays far below this.
constexpr uint64_t kMaxManifestBytes = 1ull << 30;

std::span<std::byte> bytes_of(const Tensor& tensor) { return {static_cast<std::byte*>(tensor.raw()), tensor.bytes()}; }

// The file must exist with exactly the size its rank wrote.
void check_file_size(const std::string& path, uint64_t expected) {
  std::error_code error;
  uint64_t bytes = std::filesystem::file_size(path, error);
  if (error) HAI_THROW("checkpoint file {} is missing or unreadable: {}", path, error.message());
  if (bytes != expected) {
    HAI_THROW("checkpoint file {} is {} bytes, the manifest says {} (truncated?)", path, bytes, expected);
  }
}

}  // namespace

CheckpointReader::CheckpointReader(std::string step_dir)
    : dir_(std::move(step_dir)), manifest_path_((std::filesystem::path(dir_) / kManifestFileName).string()) {
  manifest_ = manifest_from_text(read_whole_file(manifest_path_, kMaxManifestBytes), manifest_path_);
  for (size_t i = 0; i < manifest_.tensors.size(); ++i) index_.emplace(manifest_.tensors[i].name, i);
  check_files();
}

void CheckpointReader::check_files() {
  for (const FileRecord& file : manifest_.files) {
    std::string path = (std::filesystem::path(dir_) / file.name).string();
    check_file_size(path, file.bytes);
    files_.emplace(file.name, SafetensorsFile(path));
  }
  for (const TensorRecord& tensor : manifest_.tensors) {
    for (const StoredSlice& slice : tensor.slices) {
      const SafetensorsFile& file = files_.at(slice.file);
      const SafetensorsEntry* entry = file.find(slice.key);
      if (entry == nullptr) HAI_THROW("{}: tensor '{}' ({}) is missing", file.path(), tensor.name, slice.key);
      if (entry->dtype != tensor.dtype || entry->shape != slice.box.extents) {
        HAI_THROW("{}: tensor '{}' ({}) is {} [{}], the manifest says {} [{}]", file.path(), tensor.name, slice.key,
                  dtype_name(entry->dtype), fmt::join(entry->shape, ", "), dtype_name(tensor.dtype),
                  fmt::join(slice.box.extents, ", "));
      }
    }
  }
}

const TensorRecord& CheckpointReader::tensor(std::string_view name) const {
  auto found = index_.find(name);
  if (found == index_.end()) HAI_THROW("{}: the checkpoint has no tensor '{}'", manifest_path_, name);
  return manifest_.tensors[found->second];
}

std::vector<std::byte> CheckpointReader::read_stored(const TensorRecord& tensor, const StoredSlice& slice) const {
  const SafetensorsFile& file = files_.at(slice.file);
  const SafetensorsEntry& entry = *file.find(slice.key);
  std::vector<std::byte> bytes(entry.bytes());
  file.read(entry, bytes);
  uint32_t checksum = crc32c(bytes);
  if (checksum != slice.crc32c) {
    HAI_THROW("{}: tensor '{}' slice {} is corrupt: CRC32C {:08x}, the manifest says {:08x}", file.path(),
              tensor.name, box_str(slice.box), checksum, slice.crc32c);
  }
  return bytes;
}

void CheckpointReader::read(std::string_view name, const Tensor& out) const {
  const TensorRecord& record = tensor(name);
  if (out.shape().to_vector() != record.shape) {
    HAI_THROW("{}: tensor '{}' has shape [{}], the buffer {}", manifest_path_, name, fmt::join(record.shape, ", "),
              out.shape().str());
  }
  read_slice(name, std::vector<int64_t>(record.shape.size(), 0), out);
}

void CheckpointReader::read_slice(std::string_view name, const std::vector<int64_t>& offsets, const Tensor& out) const {
  const TensorRecord& record = tensor(name);
  std::string what = fmt::format("{}: tensor '{}'", manifest_path_, name);
  if (!out.device().is_cpu() || out.dtype() != record.dtype || !out.defined()) {
    HAI_THROW("{} is {}, the buffer {}", what, dtype_name(record.dtype), out.str());
  }
  SliceBox wanted{offsets, out.shape().to_vector()};
  check_box_inside(wanted, record.shape, what);
  size_t element_size = dtype_size(record.dtype);
  for (const StoredSlice& slice : record.slices) {
    std::optional<SliceBox> region = box_intersection(slice.box, wanted);
    if (!region) continue;
    std::vector<std::byte> stored = read_stored(record, slice);
    copy_box_region(stored, slice.box, bytes_of(out), wanted, *region, element_size);
  }
}

void CheckpointReader::verify_all() const {
  for (const TensorRecord& tensor : manifest_.tensors) {
    for (const StoredSlice& slice : tensor.slices) read_stored(tensor, slice);
  }
}

}  // namespace hai
