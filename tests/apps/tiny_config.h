#pragma once
// The hai-train tests' config: a tiny DeepSeek-V3-shaped model (MLA, 1 dense + 1 MoE layer with group-limited
// routing, MTP depth 1) on synthetic tokens, CPU fp32, two micro-batches per step, with its checkpoints and run
// dir inside a test directory. Tests vary it with --set style overrides.

#include <filesystem>
#include <string>
#include <vector>

#include "framework/config/config.h"
#include "framework/config/load.h"
#include "tests/framework/data/temp_directory.h"

namespace hai::testing {

inline std::string tiny_config_yaml(const std::filesystem::path& dir) {
  return R"(model:
  vocab_size: 257
  hidden_size: 32
  num_layers: 2
  first_dense_layers: 1
  dense_ffn_size: 64
  num_heads: 2
  q_lora_rank: 16
  kv_lora_rank: 16
  qk_nope_head_dim: 8
  qk_rope_head_dim: 8
  v_head_dim: 8
  max_seq_len: 16
  moe:
    routed_experts: 4
    shared_experts: 1
    experts_per_token: 2
    expert_ffn_size: 16
    groups: 2
    groups_per_token: 1
  mtp_depth: 1
train:
  steps: 20
  seq_len: 16
  micro_batch_size: 2
  global_batch_size: 4
  eval_batches: 2
  seed: 7
optimizer:
  lr: 3.0e-3
  min_lr: 3.0e-4
  warmup_steps: 2
  schedule: cosine
  moment_dtype: fp32
precision:
  mode: fp32
data:
  source: synthetic
checkpoint:
  dir: )" + (dir / "checkpoints").string() + R"(
  interval: 10
logging:
  run_dir: )" + (dir / "run").string() + R"(
  interval: 5
runtime:
  device: cpu
)";
}

// Writes the tiny config to <dir>/tiny.yaml and returns its path.
inline std::string write_tiny_config(const std::filesystem::path& dir) {
  std::string path = (dir / "tiny.yaml").string();
  write_text(path, tiny_config_yaml(dir));
  return path;
}

// The tiny config of `dir` with `overrides` ("a.b=value"), validated and resolved as hai-train does for one rank.
inline Config tiny_config(const std::filesystem::path& dir, const std::vector<std::string>& overrides = {}) {
  return load_config(write_tiny_config(dir), overrides, 1);
}

}  // namespace hai::testing
