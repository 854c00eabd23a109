#include "framework/checkpoint/checkpoint_manifest.h"

#include <map>
#include <set>

#include <fmt/ranges.h>

#include "framework/checkpoint/crc32c.h"
#include "framework/checkpoint/safetensors_dtype.h"
#include "framework/core/error.h"

namespace hai {
namespace {

using nlohmann::json;

constexpr std::string_view kFormatName = "hai-train checkpoint";
constexpr std::string_view kChecksumKey = "manifest_crc32c";

// The CRC32C of the document's compact JSON without the checksum field. Keys are sorted and numbers print the
// same after a round trip, so it does not depend on how the file was formatted.
uint32_t document_checksum(json document) {
  document.erase(kChecksumKey);
  std::string text = document.dump();
  return crc32c(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

json files_to_json(const std::vector<FileRecord>& files) {
  json list = json::array();
  for (const FileRecord& file : files) list.push_back({{"name", file.name}, {"bytes", file.bytes}});
  return list;
}

json tensor_to_json(const TensorRecord& tensor) {
  json slices = json::array();
  for (const StoredSlice& slice : tensor.slices) {
    slices.push_back({{"file", slice.file},
                      {"key", slice.key},
                      {"offsets", slice.box.offsets},
                      {"extents", slice.box.extents},
                      {"crc32c", slice.crc32c}});
  }
  return {{"name", tensor.name},
          {"group", checkpoint_group_name(tensor.group)},
          {"dtype", safetensors_dtype_name(tensor.dtype)},
          {"shape", tensor.shape},
          {"slices", slices}};
}

json tensors_to_json(const std::vector<TensorRecord>& tensors) {
  json list = json::array();
  for (const TensorRecord& tensor : tensors) list.push_back(tensor_to_json(tensor));
  return list;
}

std::vector<FileRecord> files_from_json(const json& list) {
  std::vector<FileRecord> files;
  for (const json& file : list) files.push_back({file.at("name").get<std::string>(), file.at("bytes").get<uint64_t>()});
  return files;
}

TensorRecord tensor_from_json(const json& value, const std::string& what) {
  TensorRecord tensor;
  tensor.name = value.at("name").get<std::string>();
  std::string group = value.at("group").get<std::string>();
  std::string dtype = value.at("dtype").get<std::string>();
  std::optional<CheckpointGroup> parsed_group = parse_checkpoint_group(group);
  std::optional<DType> parsed_dtype = parse_safetensors_dtype(dtype);
  if (!parsed_group) HAI_THROW("{}: tensor '{}' has unknown group '{}'", what, tensor.name, group);
  if (!parsed_dtype) HAI_THROW("{}: tensor '{}' has unknown dtype '{}'", what, tensor.name, dtype);
  tensor.group = *parsed_group;
  tensor.dtype = *parsed_dtype;
  tensor.shape = value.at("shape").get<std::vector<int64_t>>();
  for (const json& slice : value.at("slices")) {
    tensor.slices.push_back({slice.at("file").get<std::string>(), slice.at("key").get<std::string>(),
                             {slice.at("offsets").get<std::vector<int64_t>>(),
                              slice.at("extents").get<std::vector<int64_t>>()},
                             slice.at("crc32c").get<uint32_t>()});
  }
  return tensor;
}

std::vector<TensorRecord> tensors_from_json(const json& list, const std::string& what) {
  std::vector<TensorRecord> tensors;
  for (const json& value : list) tensors.push_back(tensor_from_json(value, what));
  return tensors;
}

std::set<std::string> unique_file_names(const std::vector<FileRecord>& files, const std::string& what) {
  std::set<std::string> names;
  for (const FileRecord& file : files) {
    if (!names.insert(file.name).second) HAI_THROW("{}: file {} is listed twice", what, file.name);
  }
  return names;
}

// The invariants of a manifest: unique names in order, every slice in a listed file, slices tiling the shape.
void check_tensors(const std::vector<TensorRecord>& tensors, const std::vector<FileRecord>& files,
                   const std::string& what) {
  std::set<std::string> file_names = unique_file_names(files, what);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorRecord& tensor = tensors[i];
    if (i > 0 && tensors[i - 1].name >= tensor.name) {
      HAI_THROW("{}: tensor '{}' is out of order or repeated", what, tensor.name);
    }
    std::vector<SliceBox> boxes;
    for (const StoredSlice& slice : tensor.slices) {
      if (!file_names.contains(slice.file)) {
        HAI_THROW("{}: tensor '{}' refers to file {}, which is not listed", what, tensor.name, slice.file);
      }
      boxes.push_back(slice.box);
    }
    check_boxes_tile(boxes, tensor.shape, fmt::format("{}: tensor '{}'", what, tensor.name));
  }
}

// Parses JSON text, turning a syntax error or a missing/mistyped field into a hai::Error naming `what`.
template <typename Result, typename Parse>
Result parse_json_text(const std::string& text, const std::string& what, Parse parse) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) HAI_THROW("{}: not valid JSON", what);
  try {
    return parse(document);
  } catch (const json::exception& error) {
    HAI_THROW("{}: {}", what, error.what());
  }
}

}  // namespace

std::string rank_entries_to_text(const RankEntries& entries) {
  return json{{"files", files_to_json(entries.files)}, {"tensors", tensors_to_json(entries.tensors)}}.dump();
}

RankEntries rank_entries_from_text(const std::string& text, const std::string& what) {
  return parse_json_text<RankEntries>(text, what, [&](const json& document) {
    return RankEntries{files_from_json(document.at("files")), tensors_from_json(document.at("tensors"), what)};
  });
}

CheckpointManifest merge_rank_entries(const CheckpointState& state, const std::vector<RankEntries>& ranks) {
  CheckpointManifest manifest{state, {}, {}};
  std::map<std::string, TensorRecord> merged;
  for (const RankEntries& rank : ranks) {
    manifest.files.insert(manifest.files.end(), rank.files.begin(), rank.files.end());
    for (const TensorRecord& tensor : rank.tensors) {
      auto [found, inserted] = merged.try_emplace(tensor.name, tensor);
      if (inserted) continue;
      TensorRecord& existing = found->second;
      if (existing.dtype != tensor.dtype || existing.shape != tensor.shape || existing.group != tensor.group) {
        HAI_THROW("checkpoint step {}: tensor '{}' is {} {} [{}] in one file and {} {} [{}] in another", state.step,
                  tensor.name, checkpoint_group_name(existing.group), dtype_name(existing.dtype),
                  fmt::join(existing.shape, ", "), checkpoint_group_name(tensor.group), dtype_name(tensor.dtype),
                  fmt::join(tensor.shape, ", "));
      }
      existing.slices.insert(existing.slices.end(), tensor.slices.begin(), tensor.slices.end());
    }
  }
  for (auto& [name, tensor] : merged) manifest.tensors.push_back(std::move(tensor));
  check_tensors(manifest.tensors, manifest.files, fmt::format("checkpoint step {}", state.step));
  return manifest;
}

std::string manifest_to_text(const CheckpointManifest& manifest) {
  const CheckpointState& state = manifest.state;
  json document = {{"format", kFormatName},
                   {"format_version", kCheckpointFormatVersion},
                   {"step", state.step},
                   {"consumed_samples", state.consumed_samples},
                   {"data_position", state.data_position},
                   {"rng_state", state.rng_state},
                   {"config", state.config},
                   {"layout", state.layout},
                   {"training_state", state.training_state},
                   {"files", files_to_json(manifest.files)},
                   {"tensors", tensors_to_json(manifest.tensors)}};
  document[kChecksumKey] = document_checksum(document);
  return document.dump(1) + "\n";
}

CheckpointManifest manifest_from_text(const std::string& text, const std::string& path) {
  CheckpointManifest manifest = parse_json_text<CheckpointManifest>(text, path, [&](const json& document) {
    if (document.at("format").get<std::string>() != kFormatName) HAI_THROW("{}: not a hai-train manifest", path);
    uint32_t checksum = document_checksum(document);
    if (checksum != document.at(kChecksumKey).get<uint32_t>()) {
      HAI_THROW("{}: the manifest is corrupt: CRC32C {:08x}, it says {:08x}", path, checksum,
                document.at(kChecksumKey).get<uint32_t>());
    }
    int version = document.at("format_version").get<int>();
    if (version != kCheckpointFormatVersion) {
      HAI_THROW("{}: format version {}, this build reads version {}", path, version, kCheckpointFormatVersion);
    }
    CheckpointState state{document.at("step").get<int64_t>(), document.at("consumed_samples").get<int64_t>(),
                          document.at("data_position"),       document.at("rng_state"),
                          document.at("config"),              document.at("layout"),
                          // NOTE: optional: manifests written before it existed have none.
                          document.value("training_state", json::object())};
    return CheckpointManifest{std::move(state), files_from_json(document.at("files")),
                              tensors_from_json(document.at("tensors"), path)};
  });
  check_tensors(manifest.tensors, manifest.files, path);
  return manifest;
}

}  // namespace hai
