#include "model/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "model/gradient_buckets.h"
#include "model/output_head.h"
#include "model/parameters.h"
#include "model/pipeline_stage.h"
#include "model/rank_share.h"
#include "model/schedule_memory.h"
#include "parallel/pipeline/placement.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/simulator.h"
#include "parallel/zero1.h"

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
  int64_t sharded_dense = 0;  // of dense and expert: those whose fp32 master ZeRO-1 shards (zero1_sharded_master)
  int64_t sharded_expert = 0;
};

// One FP8 copy of a [out, in] weight: e4m3 values and a scale per 128x128 block; kept as stored and transposed.
int64_t fp8_copies_bytes(const Shape& shape) {
  int64_t blocks = ((shape[0] + 127) / 128) * ((shape[1] + 127) / 128);
  return 2 * (shape.numel() + 4 * blocks);
}

// What a rank holds (model/rank_share.h: the boxes of tp rank 0, the largest where tp does not divide a dimension).
ParameterSplit split_parameters(const Config& config, const std::vector<HeldParameter>& share) {
  ParameterSplit split;
  bool fp8 = config.precision.mode == PrecisionMode::fp8;
  const ParallelConfig& p = config.parallel;
  auto expert_dp = static_cast<int>(std::max<int64_t>(1, p.dp.value() * p.tp / p.ep));
  std::function<bool(const ParameterSpec&)> sharded_master = zero1_sharded_master(
      config.precision.mode == PrecisionMode::fp32 ? DType::f32 : DType::bf16, static_cast<int>(p.dp.value()),
      expert_dp, reads_fp32_value);
  for (const HeldParameter& held : share) {
    const ParameterSpec& spec = held.spec;
    bool expert = spec.group == ParameterGroup::expert;
    (expert ? split.expert : split.dense) += held.box_extents.numel();
    if (sharded_master(spec)) (expert ? split.sharded_expert : split.sharded_dense) += held.box_extents.numel();
    if (fp8 && spec.fp8_gemm) split.fp8_copy_bytes += fp8_copies_bytes(held.box_extents);
    if (fp8 && spec.fp8_gemm && spec.fp8_only) split.without_compute_copy += held.box_extents.numel();
  }
  return split;
}

// The bytes of one element of each kind of tensor a decoder layer keeps from forward to backward, by precision
// (model/in_dtype.h and the layers' Contexts).
struct SavedElementBytes {
  double compute;       // a GEMM input kept in the compute dtype
  double saved;         // saved_activation_dtype: SwiGLU's gate and up, the routed experts' outputs
  double attention;     // q, kv, k_rope, o
  double linear_input;  // a Linear's kept input: the compute dtype, or under FP8 its e4m3 copy with 1x128 scales
  double o;             // the attention output, kept once (o_proj's weight gradient remakes its own copy from it)
  bool fp8;
  double swiglu_input;        // SwiGLU's gate and up as kept: the saved dtype, or under FP8 e4m3 with 1x128 scales
  double swiglu_dequantised;  // what SwiGLU's backward reads them in beside that: fp32 under FP8, else nothing
};

SavedElementBytes saved_element_bytes(PrecisionMode mode) {
  constexpr double kFp8Copy = 1.0 + 4.0 / 128;  // e4m3 + an fp32 scale per 128 tokens
  switch (mode) {
    case PrecisionMode::fp32: return {4, 4, 4, 4, 4, false, 4, 0};
    case PrecisionMode::bf16: return {2, 2, 2, 2, 2, false, 2, 0};
    case PrecisionMode::fp16: return {2, 4, 4, 2, 4, false, 4, 0};
    case PrecisionMode::fp8: return {2, 2, 2, kFp8Copy, 2, true, kFp8Copy, 4};
  }
  return {4, 4, 4, 4, 4, false, 4, 0};
}

// MLA's Context per token (mla_attention.h): selective recomputation drops x (unless FP8), the normed latents, q and
// kv. Under tensor parallelism a rank keeps its H / tp heads' tensors and the whole latents and x; under sequence
// parallelism (sequence_share 1 / tp) only its tokens' rows of x and the latents before their norms (the normed
// latents and k_rope are kept gathered, as the head-split projections read them). sequence_share 1: without it.
double attention_saved_bytes(const ModelConfig& m, int64_t tp, const SavedElementBytes& b, bool selective,
                             double sequence_share = 1.0) {
  int64_t heads = m.num_heads / tp, qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
  double latents = (4.0 * (m.q_lora_rank + m.kv_lora_rank) + 2 * 4) * sequence_share;  // before their norms, rstds
  double kept = latents + b.attention * m.qk_rope_head_dim + b.o * heads * m.v_head_dim + 4.0 * heads;  // lse
  if (!selective || b.fp8) kept += b.linear_input * m.hidden_size * sequence_share;
  if (!selective) {
    kept += b.linear_input * (m.q_lora_rank + m.kv_lora_rank) +
            b.attention * heads * (qk + m.qk_nope_head_dim + m.v_head_dim);
  }
  return kept;
}

// FeedForward's Context per row (feed_forward.h): its input, gate and up, and the activation (selective
// recomputation drops input and activation unless FP8 keeps their FP8 copies). Under sequence parallelism without
// FP8 the input is this rank's rows (sequence_share 1 / tp), gathered again for the weight gradient.
double feed_forward_saved_bytes(int64_t hidden, double ffn, const SavedElementBytes& b, bool selective,
                                double sequence_share) {
  double kept = 2 * ffn * b.swiglu_input;
  if (!selective || b.fp8) kept += b.linear_input * hidden * (b.fp8 ? 1.0 : sequence_share);
  if (!selective || b.fp8) kept += b.linear_input * ffn;
  return kept;
}

// MoeLayer's Context per token (moe_layer.h): routing, the routed experts' rows (each token K times; under FP8 their
// token-padded copies, half a 128-row tile of padding per expert segment), the combine's inputs, the shared expert.
// Under sequence parallelism (sequence_share 1 / tp) a rank routes its tokens' rows only.
double moe_saved_bytes(const Config& config, const SavedElementBytes& b, bool selective, double sequence_share) {
  const ModelConfig& m = config.model;
  const ParallelConfig& p = config.parallel;
  int64_t k = m.moe.experts_per_token, hidden = m.hidden_size, experts = m.moe.routed_experts;
  double tokens = static_cast<double>(config.train.micro_batch_size * config.train.seq_len);
  double routing = 4.0 * experts + 4.0 * 2 * k + 4.0 * 2 * k +  // scores; top-k indices, weights; the plan
                   (4.0 * experts + 4) / static_cast<double>(config.train.seq_len);  // per sequence: f, loss
  // x (the gate's W) and the routed outputs (the combine's backward), both remade under selective recomputation
  double kept = routing + (selective ? 0 : (4.0 + b.saved * k) * hidden);
  // The routed experts' FP8 copies pad each segment of rows to whole 128-row tiles; segments: every expert's rows
  // (under ep, each local expert's from each source rank: E again), T * K / E rows each on average.
  double segment_rows = tokens * static_cast<double>(k) / static_cast<double>(experts);
  double padded_rows = static_cast<double>(experts) * std::ceil(segment_rows / 128) * 128 / tokens;  // per token
  double ffn = static_cast<double>(m.moe.expert_ffn_size);
  kept += static_cast<double>(k) * 2 * ffn * b.swiglu_input;  // gate and up
  if (b.fp8) {
    kept += padded_rows * b.linear_input * ffn;  // the activation's FP8 copy
    if (selective) kept += static_cast<double>(k) * b.linear_input * ffn;  // down_proj's e4m3 input, for the outputs
  } else if (!selective) {
    kept += static_cast<double>(k) * b.compute * ffn;  // the activation
  }
  // The received rows the dispatcher keeps for W (e4m3 + 1x128 scales under FP8), at the group's average: T * K a
  // token (perfect balance, docs/scale.md). Selective recomputation dispatches them again at W instead: its send and
  // receive buffers (two rows of T * K at once) are no larger than dispatch_transient_bytes, and come after it.
  if (p.ep > 1 && !selective) kept += k * (b.fp8 ? b.linear_input : b.compute) * hidden;
  kept *= sequence_share;
  if (m.moe.shared_experts > 0) {
    kept += feed_forward_saved_bytes(
        hidden, static_cast<double>(m.moe.shared_experts * m.moe.expert_ffn_size) / static_cast<double>(p.tp), b,
        selective, sequence_share);
  }
  return kept;
}

}  // namespace

double attention_saved_bytes_per_token(const Config& config) {
  double sequence_share = config.parallel.sequence_parallel ? 1.0 / static_cast<double>(config.parallel.tp) : 1.0;
  return attention_saved_bytes(config.model, config.parallel.tp, saved_element_bytes(config.precision.mode),
                               config.train.recompute == RecomputeMode::selective, sequence_share);
}

double layer_saved_bytes_per_token(const Config& config, bool moe) {
  const ModelConfig& m = config.model;
  RecomputeMode mode = config.train.recompute;
  double tp = static_cast<double>(config.parallel.tp);
  // NOTE: under sequence parallelism a tp rank keeps its T / tp tokens' rows outside the tensor-parallel regions.
  double sequence_share = config.parallel.sequence_parallel ? 1.0 / tp : 1.0;
  double input = 4.0 * m.hidden_size * sequence_share;  // the layer's input x, fp32
  if (mode == RecomputeMode::full) {
    return input + (moe ? 4.0 * m.moe.experts_per_token * sequence_share : 0);  // + top-k indices
  }
  bool selective = mode == RecomputeMode::selective;
  SavedElementBytes b = saved_element_bytes(config.precision.mode);
  double residual_stream = input + (4.0 * m.hidden_size + 2 * 4) * sequence_share;  // x, h, the two norms' rstd
  // NOTE: a tp rank keeps its F / tp columns of the dense FFN (and of the shared experts).
  double mlp = moe ? moe_saved_bytes(config, b, selective, sequence_share)
                   : feed_forward_saved_bytes(m.hidden_size, static_cast<double>(m.dense_ffn_size) / tp, b, selective,
                                              sequence_share);
  return residual_stream + attention_saved_bytes(m, config.parallel.tp, b, selective, sequence_share) + mlp;
}

namespace {

// The attention's backward at its peak, per token (MlaAttention::backward_input): its output gradient in the compute
// dtype, d_o, d_q, d_kv, and d_k_rope per head, before q, kv and o are released; on CPU ranks also the reference
// kernel's scratch (framework/device/attention_mla.cc: k and v assembled per head, their fp32 gradients, d_q in
// fp32 where it is kept in bf16, and its bf16 operands widened; the CUDA kernel writes the gradients in place).
double attention_backward_bytes(const Config& config, const SavedElementBytes& b) {
  const ModelConfig& m = config.model;
  double gradient = b.compute == 4 || b.saved == 4 ? 4 : 2;  // bf16 where the projections take bf16 gradients
  double d_o = b.fp8 ? 4 : b.attention;
  double heads = static_cast<double>(m.num_heads);
  int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
  double held = b.compute * m.hidden_size +
                heads * (d_o * m.v_head_dim + gradient * qk + gradient * (m.qk_nope_head_dim + m.v_head_dim) +
                         4.0 * m.qk_rope_head_dim);
  if (config.runtime.device != RuntimeDevice::cpu) return held;
  held += heads * ((b.attention + 4) * (qk + m.v_head_dim) + (gradient == 4 ? 0 : 4.0 * qk));
  // NOTE: the CPU kernel reads narrower operands widened to fp32: q, k, v, o, and d_o where it is not fp32.
  if (b.attention != 4) held += heads * 4 * (2.0 * qk + 2.0 * m.v_head_dim + (d_o == 4 ? 0 : m.v_head_dim));
  return held;
}

// FeedForward's backward at its peak per row (its output gradient copy, d_activation, d_gate and d_up beside gate and
// up, and under FP8 gate and up dequantised), and what it keeps for its weight gradient beyond what it released (the
// output gradient's copy).
double feed_forward_backward_peak(int64_t hidden, double ffn, const SavedElementBytes& b) {
  return b.compute * hidden + 4 * ffn + 2 * (b.saved + b.swiglu_dequantised) * ffn;
}

// The token dispatcher's transient send and receive buffers per token under ep (parallel/token_dispatcher.h): each
// exchange holds its rows in the sending order and in the arrival order, T * K rows each (count-sized; the
// average received). The largest is the backward combine's fp32 input gradients; the forward's (FP8 or bf16 rows
// out, bf16 back) are smaller and fall outside the backward's peak.
double dispatch_transient_bytes(const Config& config) {
  if (config.parallel.ep <= 1) return 0;
  return 2 * 4 * static_cast<double>(config.model.moe.experts_per_token) * config.model.hidden_size;
}

// MoeLayer's backward at its peak per token beyond its d_x (moe_layer.cc, routed_experts.cc): the sorted rows'
// input gradient (K per token, fp32) for the whole backward and the top-k weights' gradient; then the larger of the
// routed experts' scratch (their output gradient in place of the combine's saved outputs, d_activation, d_gate_up
// beside gate_up; under ep the dispatcher's buffers) and the shared expert's beside what the experts keep.
double moe_backward_peak(const Config& config, const SavedElementBytes& b) {
  const ModelConfig& m = config.model;
  double k = static_cast<double>(m.moe.experts_per_token), hidden = static_cast<double>(m.hidden_size);
  double ffn = static_cast<double>(m.moe.expert_ffn_size);
  double kept = k * (b.compute - b.saved) * hidden;  // the output gradient in place of the outputs
  double exchanged = dispatch_transient_bytes(config);
  double routed = kept + k * (4 * ffn + 2 * (b.saved + b.swiglu_dequantised) * ffn) + exchanged;
  double shared = m.moe.shared_experts > 0
                      ? feed_forward_backward_peak(m.hidden_size,
                                                   static_cast<double>(m.moe.shared_experts * m.moe.expert_ffn_size), b)
                      : 0;
  return 4 * k * hidden + 4 * k + std::max(routed, kept + shared);
}

}  // namespace

double layer_backward_bytes_per_token(const Config& config, LayerKind kind) {
  const ModelConfig& m = config.model;
  SavedElementBytes b = saved_element_bytes(config.precision.mode);
  double hidden = static_cast<double>(m.hidden_size);
  bool moe = kind != LayerKind::dense;
  // The layer's output gradient and its input gradient, fp32, and in bf16 the input gradient's bf16 rounding (the
  // output gradient's becomes the MLP's kept copy).
  double caller = 2 * 4 * hidden + (config.precision.mode == PrecisionMode::bf16 ? 2 * hidden : 0);
  // MLP branch: d_mlp_input beside the MLP's backward.
  double mlp = 4 * hidden + (moe ? moe_backward_peak(config, b)
                                 : feed_forward_backward_peak(m.hidden_size, static_cast<double>(m.dense_ffn_size), b));
  // Attention branch: d_mlp_input, d_residual and d_attention_input (the saved residual released), what the MLP
  // keeps for its weight gradient (output gradient copies; the MoE router's logits gradient), the attention's peak.
  double mlp_kept = b.compute * hidden;
  if (moe) {
    double k = static_cast<double>(m.moe.experts_per_token);
    mlp_kept = k * (b.compute - b.saved) * hidden + 4.0 * m.moe.routed_experts +
               (m.moe.shared_experts > 0 ? b.compute * hidden : 0);
  }
  double attention = 2 * 4 * hidden + mlp_kept + attention_backward_bytes(config, b);
  double mtp = kind == LayerKind::mtp ? 2 * 4 * hidden : 0;  // d_block_output, d_projected
  return caller + std::max(mlp, attention) + mtp;
}

namespace {

// Saved bytes per token of `stage`: its dense and MoE layers, and on the last stage the MTP modules (MoE blocks,
// with their own inputs: embedding, h_{k-1}, eh_proj's input, h'_k, h_k).
double stage_saved_bytes_per_token(const Config& config, const StageLayers& stage) {
  const ModelConfig& m = config.model;
  double mtp_module = 4.0 * 4 * m.hidden_size + saved_element_bytes(config.precision.mode).compute * 2 * m.hidden_size;
  int64_t dense = std::clamp<int64_t>(m.first_dense_layers - stage.first_layer, 0, stage.layers);
  int64_t mtp = stage.last ? m.mtp_depth : 0;
  int64_t moe = stage.layers - dense + mtp;
  return static_cast<double>(dense) * layer_saved_bytes_per_token(config, false) +
         static_cast<double>(moe) * layer_saved_bytes_per_token(config, true) + static_cast<double>(mtp) * mtp_module;
}

// The backward temporaries per token of `stage`'s heaviest layer: layer_backward_bytes_per_token and what its
// backward remakes under train.recompute (its kept bytes without recomputation less those with it).
double stage_backward_bytes_per_token(const Config& config, const StageLayers& stage) {
  const ModelConfig& m = config.model;
  Config without = config;
  without.train.recompute = RecomputeMode::none;
  auto layer = [&](LayerKind kind) {
    bool moe = kind != LayerKind::dense;
    return layer_backward_bytes_per_token(config, kind) + layer_saved_bytes_per_token(without, moe) -
           layer_saved_bytes_per_token(config, moe);
  };
  int64_t dense = std::clamp<int64_t>(m.first_dense_layers - stage.first_layer, 0, stage.layers);
  double heaviest = 0;
  if (dense > 0) heaviest = std::max(heaviest, layer(LayerKind::dense));
  if (stage.layers > dense) heaviest = std::max(heaviest, layer(LayerKind::moe));
  if (stage.last && m.mtp_depth > 0) heaviest = std::max(heaviest, layer(LayerKind::mtp));
  return heaviest;
}

// Every stage's bytes per micro-batch (schedule_memory.h).
StageMemoryCosts stage_memory_costs(const Config& config, const std::vector<StageLayers>& stages) {
  double tokens = static_cast<double>(config.train.micro_batch_size * config.train.seq_len);
  // NOTE: every tp rank runs all its tokens (no sequence parallelism): tp divides only the split layers' tensors
  // (their per-token bytes above).
  StageMemoryCosts costs;
  for (const StageLayers& stage : stages) {
    costs.saved.push_back(static_cast<int64_t>(stage_saved_bytes_per_token(config, stage) * tokens));
    costs.backward.push_back(static_cast<int64_t>(stage_backward_bytes_per_token(config, stage) * tokens));
  }
  costs.boundary = static_cast<int64_t>(4.0 * static_cast<double>(config.model.hidden_size) * tokens);
  return costs;
}

// The memory of a rank holding `share`, running `held` stages, with `peak` the activation-side peak of its program.
RankMemory rank_memory(const Config& config, const std::vector<HeldParameter>& share,
                       const std::vector<StageLayers>& held, const ScheduleMemoryPeak& peak) {
  const ParallelConfig& p = config.parallel;
  const ModelConfig& m = config.model;
  int64_t dp = p.dp.value();
  int64_t element = compute_bytes(config.precision.mode);
  int64_t moment = config.optimizer.moment_dtype == MomentDType::bf16 ? 2 : 4;
  int64_t master = config.precision.mode == PrecisionMode::fp32 ? 0 : 4;

  ParameterSplit split = split_parameters(config, share);
  int64_t expert_dp = std::max<int64_t>(1, dp * p.tp / p.ep);
  RankMemory memory;
  // NOTE: ZeRO-1 shards the moments and, in mixed precision, the fp32 master of the parameters the model reads only
  // through their compute copy; the rest of the master stays whole on every rank (parallel/zero1.h).
  int64_t rank_parameters = split.dense + split.expert;
  int64_t whole_master = rank_parameters - split.sharded_dense - split.sharded_expert;
  int64_t compute_copy_bytes = master == 0 ? 0 : (rank_parameters - split.without_compute_copy) * element;
  memory.params = (master == 0 ? rank_parameters * 4 : whole_master * master) + compute_copy_bytes +
                  split.fp8_copy_bytes;
  memory.grads = (split.dense + split.expert) * 4;
  memory.optimizer = (split.dense / dp + split.expert / expert_dp) * 2 * moment +
                     (split.sharded_dense / dp + split.sharded_expert / expert_dp) * master;

  int64_t tokens = config.train.micro_batch_size * config.train.seq_len;
  bool last = std::ranges::any_of(held, [](const StageLayers& stage) { return stage.last; });
  int64_t logits = last ? std::min(tokens, head_chunk_tokens(m)) * m.vocab_size * 4 / p.tp : 0;  // one chunk, fp32
  memory.activations = peak.saved + logits;
  memory.backward = peak.backward;
  memory.pipeline_buffers = peak.buffers;
  return memory;
}

}  // namespace

namespace {

PipelineShape pipeline_shape(const ParallelConfig& p) {
  return {.schedule = p.schedule, .ranks = static_cast<int>(p.pp),
          .micro_batches = static_cast<int>(p.micro_batches.value())};
}

}  // namespace

std::vector<int64_t> live_micro_batches(const Config& config) {
  PipelineShape shape = pipeline_shape(config.parallel);
  if (shape.ranks == 1) return {1};
  std::vector<int64_t> live;
  for (const RankSimulation& rank : simulate(build_schedule(shape), StepCosts{}).ranks) {
    live.push_back(rank.peak_activations);
  }
  return live;
}

std::vector<PipelineRankMemory> estimate_pipeline_memory(const Config& config) {
  const ParallelConfig& p = config.parallel;
  PipelineShape shape = pipeline_shape(p);
  std::vector<StageLayers> stages = pipeline_stages(config.model, stage_count(shape), p.stage_layers);
  StageMemoryCosts costs = stage_memory_costs(config, stages);
  // NOTE: without a pipeline one micro-batch is alive at a time and nothing crosses a stage boundary.
  std::vector<ScheduleMemoryPeak> peaks;
  if (shape.ranks > 1) peaks = schedule_memory_peaks(build_schedule(shape), costs);
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
    ScheduleMemoryPeak peak = shape.ranks > 1 ? peaks[static_cast<size_t>(rank)]
                                              : ScheduleMemoryPeak{.saved = costs.saved[0], .backward = costs.backward[0]};
    entry.memory = rank_memory(config, share, held, peak);
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
