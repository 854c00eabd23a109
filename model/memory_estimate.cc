#include "model/memory_estimate.h"

#include <algorithm>

#include "model/output_head.h"
#include "model/parameters.h"

namespace hai {
namespace {

int64_t compute_bytes(PrecisionMode mode) {
  switch (mode) {
    case PrecisionMode::fp32: return 4;
    case PrecisionMode::bf16: return 2;
    case PrecisionMode::fp16: return 2;
    case PrecisionMode::fp8: return 1;
  }
  return 4;
}

struct ParameterSplit {
  int64_t dense = 0;   // on the rank: its stage's share of the dense parameters
  int64_t expert = 0;  // on the rank: its stage's share of its ep-th of the routed experts
};

ParameterSplit rank_parameters(const Config& config) {
  const ModelConfig& m = config.model;
  const ParallelConfig& p = config.parallel;
  int64_t expert_total = 0, dense_total = 0, edge = 0;
  for (const ParameterSpec& spec : deepseek_v3_parameters(m)) {
    int64_t numel = spec.shape.numel();
    if (spec.group == ParameterGroup::expert) {
      expert_total += numel;
    } else if (spec.name == "model.embed_tokens.weight" || spec.name == "lm_head.weight") {
      edge += numel;
    } else {
      dense_total += numel;
    }
  }
  bool dual = p.schedule != PipelineSchedule::one_f_one_b;
  int64_t copies = dual && p.pp > 1 ? 2 : 1;
  // The embedding and the head sit on the first and last stage; under DualPipe both on the same rank.
  int64_t edge_share = p.pp == 1 || dual ? edge : edge / 2;
  ParameterSplit split;
  split.dense = copies * dense_total / (p.pp * p.tp) + edge_share / p.tp;
  split.expert = copies * expert_total / (p.pp * p.ep);
  return split;
}

// Bytes forward saves per token of one decoder layer, as counted from the layers' contexts.
int64_t activation_elements_per_token(const ModelConfig& m, bool moe) {
  int64_t heads = m.num_heads, qk = m.qk_nope_head_dim + m.qk_rope_head_dim, v = m.v_head_dim;
  int64_t attention = m.hidden_size + 2 * m.q_lora_rank + 2 * (m.kv_lora_rank + m.qk_rope_head_dim) +
                      heads * (2 * qk + 3 * v);
  int64_t residual_stream = 4 * m.hidden_size;
  int64_t mlp = m.hidden_size + 3 * m.dense_ffn_size;
  if (moe) {
    int64_t routed = m.moe.experts_per_token * (2 * m.hidden_size + 3 * m.moe.expert_ffn_size);
    int64_t shared = m.moe.shared_experts * 3 * m.moe.expert_ffn_size;
    mlp = m.hidden_size + m.moe.routed_experts + routed + shared;
  }
  return attention + residual_stream + mlp;
}

int64_t live_micro_batches(const ParallelConfig& p) {
  if (p.pp == 1) return 1;
  return p.schedule == PipelineSchedule::one_f_one_b ? p.pp : p.pp + 1;
}

}  // namespace

RankMemory estimate_rank_memory(const Config& config) {
  const ParallelConfig& p = config.parallel;
  const ModelConfig& m = config.model;
  int64_t dp = p.dp.value();
  int64_t element = compute_bytes(config.precision.mode);
  int64_t moment = config.optimizer.moment_dtype == MomentDType::bf16 ? 2 : 4;
  int64_t master = config.precision.mode == PrecisionMode::fp32 ? 0 : 4;

  ParameterSplit split = rank_parameters(config);
  int64_t expert_dp = std::max<int64_t>(1, dp * p.tp / p.ep);
  RankMemory memory;
  memory.params = (split.dense + split.expert) * (master == 0 ? 4 : element);
  memory.grads = (split.dense + split.expert) * 4;
  memory.optimizer = (split.dense / dp + split.expert / expert_dp) * (master + 2 * moment);

  int64_t tokens = config.train.micro_batch_size * config.train.seq_len;
  int64_t layers = m.num_layers + m.mtp_depth;
  int64_t moe_layers = layers - m.first_dense_layers;
  int64_t per_token = (layers - moe_layers) * activation_elements_per_token(m, false) +
                      moe_layers * activation_elements_per_token(m, true);
  int64_t activation_bytes = config.runtime.device == RuntimeDevice::cpu ? 4 : element;
  int64_t stage_share = per_token * tokens / p.pp / p.tp * activation_bytes;
  int64_t logits = std::min(tokens, head_chunk_tokens(m)) * m.vocab_size * 4 / p.tp;  // one chunk's, fp32
  memory.activations = live_micro_batches(p) * stage_share + logits;
  return memory;
}

}  // namespace hai
