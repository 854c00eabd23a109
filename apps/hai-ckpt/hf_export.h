#pragma once
// hai-ckpt export-hf: a hai-train checkpoint (any layout: tensors are gathered from their slices) as an HF
// DeepSeek-V3 directory:
//   config.json                                  hf_config.h
//   model-00001-of-0000N.safetensors ...         the tensors of hf_layout.h, in its order, cut into shards of at
//                                                most `shard_bytes` (a larger tensor gets a shard of its own;
//                                                an fp8 weight and its scale share a shard)
//   model.safetensors.index.json                 {"metadata": {"total_size": tensor bytes}, "weight_map": {...}}
// One tensor is in memory at a time. The index and config.json are written last: a directory without them is an
// interrupted export.

#include <cstdint>
#include <string>

#include "apps/hai-ckpt/hf_layout.h"

namespace hai {

struct HfExportOptions {
  HfDtype dtype = HfDtype::bf16;
  bool ema = false;  // export the EMA of the parameters instead of the parameters
  uint64_t shard_bytes = 5'000'000'000;
};

// `checkpoint`: a step directory or a checkpoint directory (its `latest`). `out` must not exist or be empty.
// Returns the number of shards written.
int64_t export_hf(const std::string& checkpoint, const std::string& out, const HfExportOptions& options);

}  // namespace hai
