#pragma once
// hai-ckpt test helpers: a tiny DeepSeek-V3 config (MLA, one dense layer of FFN width 160 so that fp8 weights
// have partial 128x128 blocks, one MoE layer with 2 routed experts + 1 shared, MTP depth 1) and hai-train
// checkpoints of known values written as the trainer writes them (apps/hai-train/trainer_checkpoint.cc).

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "framework/checkpoint/checkpoint_commit.h"
#include "framework/checkpoint/checkpoint_writer.h"
#include "framework/config/load.h"
#include "framework/config/write.h"
#include "framework/core/dtype.h"
#include "framework/core/rng.h"
#include "framework/tensor/tensor.h"
#include "model/parameters.h"

namespace hai::testing {

inline std::string tiny_hf_config_yaml(const std::string& dir) {
  return R"(model:
  vocab_size: 40
  hidden_size: 16
  num_layers: 2
  first_dense_layers: 1
  dense_ffn_size: 160
  num_heads: 2
  q_lora_rank: 8
  kv_lora_rank: 8
  qk_nope_head_dim: 4
  qk_rope_head_dim: 4
  v_head_dim: 4
  max_seq_len: 16
  moe:
    routed_experts: 2
    shared_experts: 1
    experts_per_token: 1
    expert_ffn_size: 8
    groups: 1
    groups_per_token: 1
  mtp_depth: 1
train:
  steps: 2
  seq_len: 8
  micro_batch_size: 2
  global_batch_size: 4
optimizer:
  warmup_steps: 1
  moment_dtype: fp32
precision:
  mode: fp32
data:
  source: synthetic
checkpoint:
  dir: )" + dir + R"(/train-checkpoints
  resume: none
logging:
  run_dir: )" + dir + R"(/run
runtime:
  device: cpu
)";
}

// Writes the tiny config into `dir`; returns its path.
inline std::string write_tiny_hf_config(const std::string& dir, const std::string& name = "tiny.yaml") {
  std::string path = (std::filesystem::path(dir) / name).string();
  std::ofstream(path) << tiny_hf_config_yaml(dir);
  return path;
}

inline Config tiny_hf_config(const std::string& dir, const std::vector<std::string>& overrides = {}) {
  return load_config(write_tiny_hf_config(dir), overrides, 1);
}

// Known values of every parameter: normal x 0.05 rounded to bf16 (so that a BF16 export is exact), except the
// routing biases, which keep all their fp32 bits (they are exported as F32). `seed` tells sets apart.
inline std::map<std::string, OwnedTensor> known_parameters(const ModelConfig& model, uint64_t seed) {
  std::map<std::string, OwnedTensor> values;
  uint64_t stream = 0;
  for (const ParameterSpec& spec : deepseek_v3_parameters(model)) {
    OwnedTensor tensor(spec.shape, DType::f32);
    CounterRng rng(seed, stream++);
    bool bias = spec.name.ends_with("e_score_correction_bias");
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      float value = 0.05f * rng.normal(static_cast<uint64_t>(i)) + (bias ? 1e-3f : 0.0f);
      tensor.data<float>()[i] = bias ? value : round_to_dtype(value, DType::bf16);
    }
    values.emplace(spec.name, std::move(tensor));
  }
  return values;
}

struct CheckpointContents {
  std::map<std::string, OwnedTensor> parameters;
  std::map<std::string, OwnedTensor> ema;  // empty: no EMA
  std::map<std::string, OwnedTensor> moments;
};

// A full trainer-style checkpoint of step `step` in `dir` (model group; optim group with moments and the EMA).
inline std::string write_trainer_checkpoint(const std::string& dir, const Config& config, int64_t step,
                                            int64_t consumed_samples, bool with_ema, CheckpointContents& contents) {
  contents.parameters = known_parameters(config.model, 11);
  if (with_ema) contents.ema = known_parameters(config.model, 12);
  CheckpointWriter writer(dir, step);
  for (const ParameterSpec& spec : deepseek_v3_parameters(config.model)) {
    writer.add(CheckpointGroup::model, spec.name, contents.parameters.at(spec.name));
    if (with_ema) writer.add(CheckpointGroup::optim, "ema." + spec.name, contents.ema.at(spec.name));
    if (!spec.trainable) continue;
    for (std::string moment : {"optimizer.exp_avg.", "optimizer.exp_avg_sq."}) {
      auto [where, added] = contents.moments.emplace(moment + spec.name, OwnedTensor(spec.shape, DType::f32));
      writer.add(CheckpointGroup::optim, where->first, where->second);
    }
  }
  CheckpointState state;
  state.step = step;
  state.consumed_samples = consumed_samples;
  state.data_position = {{"position", "consumed_samples=" + std::to_string(consumed_samples) + " seed=1234 "
                                          "windows_per_epoch=100"}};
  state.config = config_to_json(config);
  state.layout = {{"world", 1}, {"dp", 1}, {"pp", 1}, {"tp", 1}, {"ep", 1}};
  return commit_checkpoint(dir, state, {writer.write_rank_files()}, 0);
}

inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

}  // namespace hai::testing
