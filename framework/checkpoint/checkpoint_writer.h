#pragma once
// CheckpointWriter: one rank's part of writing a checkpoint (docs/architecture.md "Checkpoints"; protocol in
// checkpoint_commit.h).
//
//   CheckpointWriter writer(dir, step, rank);
//   writer.add(CheckpointGroup::model, "model.embed_tokens.weight", global_shape, offsets, slice);  // ...
//   std::string entries = writer.write_rank_files();   // every rank
//   // the caller gathers `entries` from all ranks to rank 0 (e.g. over its Communicator), then on rank 0:
//   commit_checkpoint(dir, state, all_entries, keep);
//
// Each slice must be added by exactly one rank (replicas of a parameter: one rank writes it).

#include <cstdint>
#include <string>
#include <vector>

#include "framework/checkpoint/checkpoint_paths.h"
#include "framework/checkpoint/slice_box.h"
#include "framework/tensor/tensor.h"

namespace hai {

class CheckpointWriter {
 public:
  CheckpointWriter(std::string dir, int64_t step, int rank = 0);

  // Registers the slice of tensor `name` (of `global_shape`) that starts at `offsets` and has data's shape. `data`
  // is a contiguous CPU tensor; the writer keeps the view, so it must stay valid until write_rank_files().
  void add(CheckpointGroup group, const std::string& name, const std::vector<int64_t>& global_shape,
           const std::vector<int64_t>& offsets, const Tensor& data);
  // The whole tensor.
  void add(CheckpointGroup group, const std::string& name, const Tensor& data);

  // Writes this rank's model and optim safetensors files into <dir>/step_N.tmp/ (creating it), fsynced, and
  // returns what it wrote as JSON text (checkpoint_manifest.h RankEntries) for rank 0's commit.
  std::string write_rank_files() const;

 private:
  struct Pending {
    CheckpointGroup group;
    std::string name;
    std::vector<int64_t> global_shape;
    SliceBox box;
    Tensor data;
  };

  std::string dir_;
  int64_t step_;
  int rank_;
  std::vector<Pending> pending_;
};

}  // namespace hai
