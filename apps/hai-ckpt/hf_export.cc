#include "apps/hai-ckpt/hf_export.h"

#include <filesystem>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/hai-ckpt/checkpoint_source.h"
#include "apps/hai-ckpt/hf_config.h"
#include "apps/hai-ckpt/hf_directory.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "framework/checkpoint/file_io.h"
#include "framework/checkpoint/safetensors_writer.h"
#include "framework/core/error.h"
#include "framework/device/cast.h"
#include "framework/device/fp8_quantize.h"

namespace hai {
namespace {

namespace fs = std::filesystem;

using Shard = std::vector<const HfTensor*>;

// Consecutive tensors, a new shard whenever the next one would take the current one past `limit`.
std::vector<Shard> plan_shards(const std::vector<HfTensor>& tensors, uint64_t limit) {
  std::vector<Shard> shards;
  uint64_t filled = 0;
  for (const HfTensor& tensor : tensors) {
    uint64_t bytes = hf_stored_bytes(tensor);
    if (shards.empty() || (filled > 0 && filled + bytes > limit)) {
      shards.emplace_back();
      filled = 0;
    }
    shards.back().push_back(&tensor);
    filled += bytes;
  }
  return shards;
}

std::string shard_name(size_t index, size_t count) {
  return fmt::format("model-{:05d}-of-{:05d}.safetensors", index + 1, count);
}

std::vector<SafetensorsLayoutEntry> shard_layout(const Shard& shard) {
  std::vector<SafetensorsLayoutEntry> layout;
  for (const HfTensor* tensor : shard) {
    switch (tensor->storage) {
      case HfStorage::bf16: layout.push_back({tensor->name, DType::bf16, tensor->shape}); break;
      case HfStorage::f32: layout.push_back({tensor->name, DType::f32, tensor->shape}); break;
      case HfStorage::fp8_blocks:
        layout.push_back({tensor->name, DType::e4m3, tensor->shape});
        layout.push_back({hf_scale_name(tensor->name), DType::f32, hf_scale_shape(tensor->shape)});
        break;
    }
  }
  return layout;
}

std::span<const std::byte> bytes_of(const Tensor& tensor) {
  return {static_cast<const std::byte*>(tensor.raw()), tensor.bytes()};
}

// Writes `master` ([shape] fp32) as the tensor's storage: the tensor, then its scale for fp8.
void write_stored(SafetensorsStreamWriter& writer, const HfTensor& tensor, const Tensor& master) {
  switch (tensor.storage) {
    case HfStorage::f32: writer.write_next(bytes_of(master)); return;
    case HfStorage::bf16: {
      OwnedTensor rounded(master.shape(), DType::bf16);  // [shape]
      cast_tensor(rounded, master);
      writer.write_next(bytes_of(rounded));
      return;
    }
    case HfStorage::fp8_blocks: {
      OwnedTensor quantized(master.shape(), DType::e4m3);                        // [out, in]
      OwnedTensor scale_inv(Shape(hf_scale_shape(tensor.shape)), DType::f32);  // [ceil(out/128), ceil(in/128)]
      quantize_128x128(quantized, scale_inv, master);
      writer.write_next(bytes_of(quantized));
      writer.write_next(bytes_of(scale_inv));
      return;
    }
  }
}

void prepare_output_dir(const std::string& out) {
  std::error_code error;
  fs::create_directories(out, error);
  if (error) HAI_THROW("cannot create {}: {}", out, error.message());
  if (!list_directory(out).empty()) HAI_THROW("{} is not empty: export into a new directory", out);
}

std::string dump(const nlohmann::ordered_json& json) { return json.dump(2) + "\n"; }

}  // namespace

int64_t export_hf(const std::string& checkpoint, const std::string& out, const HfExportOptions& options) {
  CheckpointReader reader(checkpoint_step_dir(checkpoint));
  Config config = checkpoint_config(reader.state(), reader.path());
  std::vector<HfTensor> tensors = hf_tensors(config.model, options.dtype);
  std::string source_prefix = options.ema ? "ema." : "";
  if (options.ema && !reader.contains(source_prefix + tensors.front().source)) {
    HAI_THROW("{} holds no EMA of the parameters (it was saved with ema.enabled false)", reader.path());
  }
  prepare_output_dir(out);

  std::vector<Shard> shards = plan_shards(tensors, options.shard_bytes);
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  uint64_t total_size = 0;
  for (size_t index = 0; index < shards.size(); ++index) {
    std::string name = shard_name(index, shards.size());
    std::vector<SafetensorsLayoutEntry> layout = shard_layout(shards[index]);
    SafetensorsStreamWriter writer((fs::path(out) / name).string(), layout, {{"format", "pt"}});
    for (const HfTensor* tensor : shards[index]) {
      OwnedTensor master(Shape(tensor->shape), DType::f32);  // [shape]
      reader.read(source_prefix + tensor->source, master);
      write_stored(writer, *tensor, master);
      total_size += hf_stored_bytes(*tensor);
    }
    writer.finish();
    for (const SafetensorsLayoutEntry& entry : layout) weight_map[entry.name] = name;
  }
  nlohmann::ordered_json index = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
  write_file_synced((fs::path(out) / kHfIndexFileName).string(), dump(index));
  write_file_synced((fs::path(out) / "config.json").string(), dump(hf_config_json(config.model, options.dtype)));
  sync_directory(out);
  return static_cast<int64_t>(shards.size());
}

}  // namespace hai
