#include "model/memory_estimate.h"

#include <algorithm>

#include "model/output_head.h"
#include "model/parameters.h"
#include "model/pipeline_stage.h"

namespace hai {
namespace {

// The bytes of a compute-copy element and of a saved activation. NOTE: fp8 keeps a bf16 compute copy of every
// parameter but the fp8_only ones (the routed experts, ParameterStore) beside the FP8 weight copies, and most saved
// activations in bf16.
int64_t compute_bytes(PrecisionMode mode) {
  switch (mode) {
    case PrecisionMode::fp32: return 4;
    case PrecisionMode::bf16: return 2;
    case PrecisionMode::fp16: return 2;
    case PrecisionMode::fp8: return 2;
  }
  return 4;
}

struct ParameterSplit {
  int64_t dense = 0;   // on the rank: the dense parameters, embedding and head included
  int64_t expert = 0;  // on the rank: its ep-th of the routed experts
  int64_t fp8_copy_bytes = 0;  // the FP8 copies of the fp8_gemm weights under precision.mode fp8
  int64_t without_compute_copy = 0;  // on the rank: the fp8_only weights under precision.mode fp8
};

// One FP8 copy of a [out, in] weight: e4m3 values and a scale per 128x128 block; kept as stored and transposed.
int64_t fp8_copies_bytes(const Shape& shape) {
  int64_t blocks = ((shape[0] + 127) / 128) * ((shape[1] + 127) / 128);
  return 2 * (shape.numel() + 4 * blocks);
}

// NOTE: every pipeline rank keeps the whole parameter store (apps/hai-train/training_pipeline.h: stores are not
// sharded by stage yet), so pp divides neither the parameters nor their gradients and moments.
ParameterSplit rank_parameters(const Config& config) {
  const ParallelConfig& p = config.parallel;
  ParameterSplit split;
  bool fp8 = config.precision.mode == PrecisionMode::fp8;
  int64_t dense_fp8 = 0, expert_fp8 = 0, dense_fp8_only = 0, expert_fp8_only = 0;
  for (const ParameterSpec& spec : deepseek_v3_parameters(config.model)) {
    bool expert = spec.group == ParameterGroup::expert;
    (expert ? split.expert : split.dense) += spec.shape.numel();
    if (fp8 && spec.fp8_gemm) (expert ? expert_fp8 : dense_fp8) += fp8_copies_bytes(spec.shape);
    if (fp8 && spec.fp8_gemm && spec.fp8_only) (expert ? expert_fp8_only : dense_fp8_only) += spec.shape.numel();
  }
  split.dense /= p.tp;
  split.expert /= p.ep;
  split.fp8_copy_bytes = dense_fp8 / p.tp + expert_fp8 / p.ep;
  split.without_compute_copy = dense_fp8_only / p.tp + expert_fp8_only / p.ep;
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

// Activation elements per token of the pipeline stage that saves the most: its dense and MoE layers, and on the
// last stage the MTP modules (MoE blocks). One stage (the whole model) without pipelining.
int64_t heaviest_stage_elements_per_token(const Config& config) {
  const ModelConfig& m = config.model;
  const ParallelConfig& p = config.parallel;
  int stages = static_cast<int>(p.schedule == PipelineSchedule::dualpipev ? 2 * p.pp : p.pp);
  int64_t heaviest = 0;
  for (const StageLayers& stage : pipeline_stages(m, stages, p.stage_layers)) {
    int64_t dense = std::clamp<int64_t>(m.first_dense_layers - stage.first_layer, 0, stage.layers);
    int64_t moe = stage.layers - dense + (stage.last ? m.mtp_depth : 0);
    heaviest = std::max(heaviest, dense * activation_elements_per_token(m, false) +
                                      moe * activation_elements_per_token(m, true));
  }
  return heaviest;
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
  // NOTE: ZeRO-1 shards the moments; the fp32 master values stay whole on every rank (parallel/zero1.h).
  int64_t rank_parameters = split.dense + split.expert;
  int64_t compute_copy_bytes = master == 0 ? 0 : (rank_parameters - split.without_compute_copy) * element;
  memory.params = rank_parameters * (master == 0 ? 4 : master) + compute_copy_bytes + split.fp8_copy_bytes;
  memory.grads = (split.dense + split.expert) * 4;
  memory.optimizer = (split.dense / dp + split.expert / expert_dp) * 2 * moment;

  int64_t tokens = config.train.micro_batch_size * config.train.seq_len;
  int64_t activation_bytes = config.runtime.device == RuntimeDevice::cpu ? 4 : element;
  int64_t stage_share = heaviest_stage_elements_per_token(config) * tokens / p.tp * activation_bytes;
  int64_t logits = std::min(tokens, head_chunk_tokens(m)) * m.vocab_size * 4 / p.tp;  // one chunk's, fp32
  memory.activations = live_micro_batches(p) * stage_share + logits;
  return memory;
}

}  // namespace hai
