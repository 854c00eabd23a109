#pragma once
// The manifest of a checkpoint (manifest.json) and the per-rank entries it is merged from.
//
// Every rank describes what it wrote as RankEntries (its files with their sizes, and for each tensor the slices
// it stored); the caller gathers those from all ranks (as JSON text) and rank 0 merges them into the manifest,
// which also records the training state. See docs/formats.md "Checkpoints" for the JSON layout.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/checkpoint/checkpoint_paths.h"
#include "framework/checkpoint/slice_box.h"
#include "framework/core/dtype.h"

namespace hai {

inline constexpr int kCheckpointFormatVersion = 1;

// What training needs besides the tensors to continue exactly where it stopped.
struct CheckpointState {
  int64_t step = 0;
  int64_t consumed_samples = 0;
  nlohmann::json data_position = nlohmann::json::object();  // the data loader's position
  nlohmann::json rng_state = nlohmann::json::object();
  nlohmann::json config = nlohmann::json::object();  // the effective config
  nlohmann::json layout = nlohmann::json::object();  // the parallel layout that wrote the checkpoint
  nlohmann::json training_state = nlohmann::json::object();  // the trainer's own state (e.g. the fp16 loss scale)
};

// One stored slice of a tensor: the file (name inside the step directory), the tensor's key in that file, where
// the slice lies in the global shape, and the CRC32C of its bytes.
struct StoredSlice {
  std::string file;
  std::string key;
  SliceBox box;
  uint32_t crc32c = 0;
};

struct TensorRecord {
  std::string name;  // the global (HF-style) name
  CheckpointGroup group = CheckpointGroup::model;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;  // the global shape
  std::vector<StoredSlice> slices;
};

struct FileRecord {
  std::string name;
  uint64_t bytes = 0;
};

// What one rank wrote.
struct RankEntries {
  std::vector<FileRecord> files;
  std::vector<TensorRecord> tensors;
};

struct CheckpointManifest {
  CheckpointState state;
  std::vector<FileRecord> files;
  std::vector<TensorRecord> tensors;  // sorted by name, each with slices that tile its shape
};

std::string rank_entries_to_text(const RankEntries& entries);
// `what` names the source in errors (e.g. "rank 3's checkpoint entries").
RankEntries rank_entries_from_text(const std::string& text, const std::string& what);

// Merges every rank's entries: file names unique, a tensor's dtype, shape and group equal on every rank, its
// slices disjoint and covering the global shape. Throws hai::Error naming the tensor otherwise.
CheckpointManifest merge_rank_entries(const CheckpointState& state, const std::vector<RankEntries>& ranks);

std::string manifest_to_text(const CheckpointManifest& manifest);
// Parses and checks a manifest (format, version, the invariants of merge_rank_entries, every slice's file
// listed); errors name `path`.
CheckpointManifest manifest_from_text(const std::string& text, const std::string& path);

}  // namespace hai
