#include "apps/hai-ckpt/hf_import.h"

#include <filesystem>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/hai-ckpt/hf_directory.h"
#include "apps/hai-ckpt/hf_layout.h"
#include "framework/checkpoint/checkpoint_commit.h"
#include "framework/checkpoint/checkpoint_manifest.h"
#include "framework/checkpoint/crc32c.h"
#include "framework/checkpoint/file_io.h"
#include "framework/checkpoint/safetensors_writer.h"
#include "framework/config/write.h"
#include "framework/core/error.h"
#include "framework/device/cast.h"
#include "framework/device/fp8_quantize.h"

namespace hai {
namespace {

namespace fs = std::filesystem;

bool is_float(DType dtype) { return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16; }

void check_entry(const HfDirectory& hf, const std::string& name, const std::vector<int64_t>& shape) {
  const SafetensorsEntry* entry = hf.find(name);
  if (entry == nullptr) {
    HAI_THROW("{} has no tensor '{}' (the config expects [{}])", hf.path(), name, fmt::join(shape, ", "));
  }
  if (entry->shape != shape) {
    HAI_THROW("{} is [{}], the config expects [{}]", hf.where(name), fmt::join(entry->shape, ", "),
              fmt::join(shape, ", "));
  }
  if (entry->dtype == DType::e4m3 && shape.size() != 2) HAI_THROW("{} is F8_E4M3 but not 2-D", hf.where(name));
  if (!is_float(entry->dtype) && entry->dtype != DType::e4m3) {
    HAI_THROW("{} is {}: expected F32, BF16, F16 or F8_E4M3", hf.where(name), dtype_name(entry->dtype));
  }
}

void check_scale(const HfDirectory& hf, const std::string& weight_name, const std::vector<int64_t>& weight_shape) {
  std::string name = hf_scale_name(weight_name);
  std::vector<int64_t> shape = hf_scale_shape(weight_shape);
  check_entry(hf, name, shape);
  if (!is_float(hf.find(name)->dtype)) HAI_THROW("{} is F8_E4M3: a scale must be F32 or BF16", hf.where(name));
}

// Checks every tensor against the config; returns the parameters to import.
std::vector<HfTensor> check_against_config(const HfDirectory& hf, const ModelConfig& model) {
  std::vector<HfTensor> parameters;
  std::set<std::string> expected;
  for (const HfTensor& tensor : hf_tensors(model, HfDtype::bf16)) {
    check_entry(hf, tensor.name, tensor.shape);
    expected.insert(tensor.name);
    if (hf.find(tensor.name)->dtype == DType::e4m3) {
      check_scale(hf, tensor.name, tensor.shape);
      expected.insert(hf_scale_name(tensor.name));
    }
    if (tensor.name == tensor.source) parameters.push_back(tensor);
  }
  for (const std::string& name : hf.names()) {
    if (!expected.contains(name)) HAI_THROW("{}: the config has no such tensor", hf.where(name));
  }
  return parameters;
}

// The tensor as fp32, dequantised when it is stored as fp8.
OwnedTensor read_fp32(const HfDirectory& hf, const std::string& name) {
  OwnedTensor stored = hf.read(name);
  OwnedTensor values(stored.shape(), DType::f32);  // [shape]
  if (stored.tensor().dtype() != DType::e4m3) {
    cast_tensor(values, stored);
    return values;
  }
  OwnedTensor scale_inv = read_fp32(hf, hf_scale_name(name));  // [ceil(out/128), ceil(in/128)]
  dequantize_128x128(values, stored, scale_inv);
  return values;
}

std::span<const std::byte> bytes_of(const Tensor& tensor) {
  return {static_cast<const std::byte*>(tensor.raw()), tensor.bytes()};
}

// Writes the model file tensor by tensor; returns what it wrote for the manifest.
TensorRecord import_parameter(const HfDirectory& hf, const HfTensor& parameter, const std::string& file,
                              SafetensorsStreamWriter& writer) {
  OwnedTensor values = read_fp32(hf, parameter.name);  // [shape]
  writer.write_next(bytes_of(values));
  StoredSlice slice{file, parameter.name, whole_box(parameter.shape), crc32c(bytes_of(values))};
  return {parameter.name, CheckpointGroup::model, DType::f32, parameter.shape, {slice}};
}

RankEntries write_rank_files(const HfDirectory& hf, const std::vector<HfTensor>& parameters,
                             const std::string& directory) {
  RankEntries entries;
  std::string model_file = rank_file_name(CheckpointGroup::model, 0);
  std::vector<SafetensorsLayoutEntry> layout;
  for (const HfTensor& parameter : parameters) layout.push_back({parameter.name, DType::f32, parameter.shape});
  SafetensorsStreamWriter writer((fs::path(directory) / model_file).string(), layout, {{"format", "pt"}});
  for (const HfTensor& parameter : parameters) {
    entries.tensors.push_back(import_parameter(hf, parameter, model_file, writer));
  }
  entries.files.push_back({model_file, writer.finish()});
  std::string optim_file = rank_file_name(CheckpointGroup::optim, 0);
  entries.files.push_back(
      {optim_file, write_safetensors((fs::path(directory) / optim_file).string(), {}, {{"format", "pt"}})});
  sync_directory(directory);
  return entries;
}

std::string prepare_step_dir(const std::string& out) {
  std::error_code error;
  fs::create_directories(out, error);
  if (error) HAI_THROW("cannot create {}: {}", out, error.message());
  if (!list_directory(out).empty()) HAI_THROW("{} is not empty: import into a new directory", out);
  std::string directory = (fs::path(out) / (step_dir_name(0) + std::string(kTemporarySuffix))).string();
  fs::create_directories(directory, error);
  if (error) HAI_THROW("cannot create {}: {}", directory, error.message());
  return directory;
}

}  // namespace

std::string import_hf(const std::string& hf_dir, const std::string& out, const Config& config) {
  HfDirectory hf(hf_dir);
  std::vector<HfTensor> parameters = check_against_config(hf, config.model);
  std::string directory = prepare_step_dir(out);
  RankEntries entries = write_rank_files(hf, parameters, directory);
  CheckpointState state;
  state.config = config_to_json(config);
  state.layout = {{"world", 1}, {"dp", 1}, {"pp", 1}, {"tp", 1}, {"ep", 1}};
  return commit_checkpoint(out, state, {rank_entries_to_text(entries)}, 0);
}

}  // namespace hai
