#include "framework/checkpoint/checkpoint_writer.h"

#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "framework/checkpoint/checkpoint_manifest.h"
#include "framework/checkpoint/crc32c.h"
#include "framework/checkpoint/file_io.h"
#include "framework/checkpoint/safetensors_writer.h"
#include "framework/core/error.h"

namespace hai {
namespace {

std::span<const std::byte> bytes_of(const Tensor& tensor) {
  return {static_cast<const std::byte*>(tensor.raw()), tensor.bytes()};
}

// The tensor's key inside a rank file: its name when the slice is the whole tensor, else "name[0:2, 0:8]".
std::string slice_key(const std::string& name, const std::vector<int64_t>& global_shape, const SliceBox& box) {
  return box == whole_box(global_shape) ? name : name + box_str(box);
}

std::string temporary_dir(const std::string& dir, int64_t step) {
  return (std::filesystem::path(dir) / (step_dir_name(step) + std::string(kTemporarySuffix))).string();
}

}  // namespace

CheckpointWriter::CheckpointWriter(std::string dir, int64_t step, int rank)
    : dir_(std::move(dir)), step_(step), rank_(rank) {
  HAI_CHECK(step >= 0 && rank >= 0, "checkpoint step {} rank {}", step, rank);
}

void CheckpointWriter::add(CheckpointGroup group, const std::string& name, const std::vector<int64_t>& global_shape,
                           const std::vector<int64_t>& offsets, const Tensor& data) {
  HAI_CHECK(data.device().is_cpu() && data.defined(), "checkpoint tensor '{}' must be in CPU memory ({})", name,
            data.str());
  SliceBox box{offsets, data.shape().to_vector()};
  check_box_inside(box, global_shape, fmt::format("checkpoint tensor '{}'", name));
  for (const Pending& other : pending_) {
    HAI_CHECK(other.name != name || other.box != box, "checkpoint tensor '{}' slice {} added twice", name,
              box_str(box));
  }
  pending_.push_back({group, name, global_shape, std::move(box), data});
}

void CheckpointWriter::add(CheckpointGroup group, const std::string& name, const Tensor& data) {
  std::vector<int64_t> shape = data.shape().to_vector();
  add(group, name, shape, std::vector<int64_t>(shape.size(), 0), data);
}

std::string CheckpointWriter::write_rank_files() const {
  std::string directory = temporary_dir(dir_, step_);
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) HAI_THROW("cannot create {}: {}", directory, error.message());
  RankEntries entries;
  for (CheckpointGroup group : {CheckpointGroup::model, CheckpointGroup::optim}) {
    std::string file = rank_file_name(group, rank_);
    std::vector<SafetensorsInput> inputs;
    for (const Pending& tensor : pending_) {
      if (tensor.group != group) continue;
      std::string key = slice_key(tensor.name, tensor.global_shape, tensor.box);
      inputs.push_back({key, tensor.data.dtype(), tensor.box.extents, bytes_of(tensor.data)});
      StoredSlice slice{file, key, tensor.box, crc32c(bytes_of(tensor.data))};
      entries.tensors.push_back({tensor.name, group, tensor.data.dtype(), tensor.global_shape, {slice}});
    }
    uint64_t bytes = write_safetensors(directory + "/" + file, inputs, {{"format", "pt"}});
    entries.files.push_back({file, bytes});
  }
  sync_directory(directory);
  return rank_entries_to_text(entries);
}

}  // namespace hai
