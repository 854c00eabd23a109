#include "model/memory_estimate.h"

#include <algorithm>

#include "model/output_head.h"
#include "model/parameters.h"
#include "model/pipeline_stage.h"
#include "model/rank_share.h"
#include "parallel/pipeline/placement.h"

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
  int64_t dense = 0;   // on the rank: the dense parameters of its stages, embedding and head included
  int64_t expert = 0;  // on the rank: its ep-th of its stages' routed experts
  int64_t fp8_copy_bytes = 0;  // the FP8 copies of the fp8_gemm weights under precision.mode fp8
  int64_t without_compute_copy = 0;  // on the rank: the fp8_only weights under precision.mode fp8
};

// One FP8 copy of a [out, in] weight: e4m3 values and a scale per 128x128 block; kept as stored and transposed.
int64_t fp8_copies_bytes(const Shape& shape) {
  int64_t blocks = ((shape[0] + 127) / 128) * ((shape[1] + 127) / 128);
  return 2 * (shape.numel() + 4 * blocks);
}

// What a rank holds (model/rank_share.h). NOTE: tp is not built; the dense parameters are divided by it as tensor
// parallelism will.
ParameterSplit split_parameters(const Config& config, const std::vector<HeldParameter>& share) {
  ParameterSplit split;
  bool fp8 = config.precision.mode == PrecisionMode::fp8;
  for (const HeldParameter& held : share) {
    const ParameterSpec& spec = held.spec;
    bool expert = spec.group == ParameterGroup::expert;
    int64_t tp = expert ? 1 : config.parallel.tp;
    (expert ? split.expert : split.dense) += held.box_extents.numel() / tp;
    if (fp8 && spec.fp8_gemm) split.fp8_copy_bytes += fp8_copies_bytes(held.box_extents) / tp;
    if (fp8 && spec.fp8_gemm && spec.fp8_only) split.without_compute_copy += held.box_extents.numel() / tp;
  }
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

// Activation elements per token of the stage among `held` that saves the most: its dense and MoE layers, and on the
// last stage the MTP modules (MoE blocks).
int64_t heaviest_stage_elements_per_token(const ModelConfig& m, const std::vector<StageLayers>& held) {
  int64_t heaviest = 0;
  for (const StageLayers& stage : held) {
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

// The memory of a rank holding `share` and running `held` stages.
RankMemory rank_memory(const Config& config, const std::vector<HeldParameter>& share,
                       const std::vector<StageLayers>& held) {
  const ParallelConfig& p = config.parallel;
  const ModelConfig& m = config.model;
  int64_t dp = p.dp.value();
  int64_t element = compute_bytes(config.precision.mode);
  int64_t moment = config.optimizer.moment_dtype == MomentDType::bf16 ? 2 : 4;
  int64_t master = config.precision.mode == PrecisionMode::fp32 ? 0 : 4;

  ParameterSplit split = split_parameters(config, share);
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
  int64_t stage_share = heaviest_stage_elements_per_token(m, held) * tokens / p.tp * activation_bytes;
  bool last = std::ranges::any_of(held, [](const StageLayers& stage) { return stage.last; });
  int64_t logits = last ? std::min(tokens, head_chunk_tokens(m)) * m.vocab_size * 4 / p.tp : 0;  // one chunk, fp32
  memory.activations = live_micro_batches(p) * stage_share + logits;
  return memory;
}

}  // namespace

std::vector<PipelineRankMemory> estimate_pipeline_memory(const Config& config) {
  const ParallelConfig& p = config.parallel;
  PipelineShape shape{.schedule = p.schedule, .ranks = static_cast<int>(p.pp), .micro_batches = 1};
  std::vector<StageLayers> stages = pipeline_stages(config.model, stage_count(shape), p.stage_layers);
  std::vector<PipelineRankMemory> ranks;
  for (int rank = 0; rank < shape.ranks; ++rank) {
    PipelineRankMemory entry;
    entry.pipeline_rank = rank;
    std::vector<StageLayers> held;
    for (int chunk = 0; chunk < chunk_count(shape); ++chunk) {
      int stage = stage_of_chunk(shape, rank, chunk);
      entry.stages.push_back(stage);
      held.push_back(stages[static_cast<size_t>(stage)]);
    }
    for (const StageLayers& stage : held) {
      entry.layers.emplace_back(stage.first_layer, stage.first_layer + stage.layers - 1);
      entry.embedding |= stage.first;
      entry.head |= stage.last;
    }
    // NOTE: the ranks of one pipeline rank hold equal amounts (EP ranks equal shares of the experts): EP rank 0's.
    std::vector<HeldParameter> share = rank_share(config.model, p, {.dp = 0, .pp = rank, .tp = 0});
    for (const HeldParameter& parameter : share) entry.parameters += parameter.box_extents.numel();
    entry.memory = rank_memory(config, share, held);
    ranks.push_back(std::move(entry));
  }
  return ranks;
}

RankMemory estimate_rank_memory(const Config& config) {
  RankMemory largest;
  for (const PipelineRankMemory& rank : estimate_pipeline_memory(config)) {
    if (rank.memory.total() > largest.total()) largest = rank.memory;
  }
  return largest;
}

bool fits_device(const RankMemory& memory, double device_memory_gib) {
  return static_cast<double>(memory.total()) <= device_memory_gib * 1024.0 * 1024.0 * 1024.0;
}

}  // namespace hai
