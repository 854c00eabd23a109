#pragma once
// CheckpointReader: opens a committed step directory and reads tensors back by global name, whole or as any
// slice of the global shape (so a checkpoint written under one layout loads into another).
//
// Opening checks the manifest, that every file it lists exists with its recorded size, that each file's
// safetensors header is valid and holds every slice the manifest places there with the right dtype and shape.
// Reading checks the CRC32C of every stored slice it touches. Every refusal is a hai::Error naming the file
// (and the tensor).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "framework/checkpoint/checkpoint_manifest.h"
#include "framework/checkpoint/safetensors_reader.h"
#include "framework/tensor/tensor.h"

namespace hai {

class CheckpointReader {
 public:
  explicit CheckpointReader(std::string step_dir);

  const std::string& path() const { return dir_; }
  const CheckpointState& state() const { return manifest_.state; }
  const std::vector<TensorRecord>& tensors() const { return manifest_.tensors; }
  const std::vector<FileRecord>& files() const { return manifest_.files; }
  bool contains(std::string_view name) const { return index_.contains(name); }
  // Throws naming the checkpoint when there is no such tensor.
  const TensorRecord& tensor(std::string_view name) const;

  // The whole tensor into `out` (CPU, the stored dtype, the global shape).
  void read(std::string_view name, const Tensor& out) const;
  // The slice starting at `offsets` with out's shape into `out` (CPU, the stored dtype).
  void read_slice(std::string_view name, const std::vector<int64_t>& offsets, const Tensor& out) const;
  // Reads every stored slice and checks its CRC32C (hai-ckpt verify).
  void verify_all() const;

 private:
  // The bytes of one stored slice, after checking its CRC32C.
  std::vector<std::byte> read_stored(const TensorRecord& tensor, const StoredSlice& slice) const;
  void check_files();

  std::string dir_;
  std::string manifest_path_;
  CheckpointManifest manifest_;
  std::map<std::string, SafetensorsFile, std::less<>> files_;
  std::map<std::string, size_t, std::less<>> index_;  // tensor name -> position in manifest_.tensors
};

}  // namespace hai
