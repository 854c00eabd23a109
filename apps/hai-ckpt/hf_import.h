#pragma once
// hai-ckpt import-hf: an HF DeepSeek-V3 directory (BF16, F16, F32, or F8_E4M3 with `<name>_scale_inv` 128x128
// block scales: w = q * scale_inv) as a weights-only hai-train checkpoint for a config:
//   <out>/latest, <out>/step_00000000/{manifest.json, model-rank00000.safetensors, optim-rank00000.safetensors}
// step 0, every parameter in fp32 in the model group, no optimizer state and no data position, so that
// `hai-train --set checkpoint.resume=<out>` starts from these weights with fresh AdamW moments, the EMA at the
// weights and the data at its first sample (apps/hai-train/trainer_checkpoint.cc).
//
// Every tensor is checked against the config before anything is written: each parameter present with its shape,
// nothing left over (the MTP modules' copies of the embedding and head are checked for shape, then dropped: the
// model shares one of each). Any mismatch is a hai::Error naming the tensor. Tensors are then converted and
// written one at a time: peak memory is about one tensor, never the model.

#include <string>

#include "framework/config/config.h"

namespace hai {

// `out` must not exist or be empty. Returns the step directory written.
std::string import_hf(const std::string& hf_dir, const std::string& out, const Config& config);

}  // namespace hai
