#include <numeric>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "framework/config/config_enums.h"
#include "framework/config/validate.h"
#include "framework/config/validation_rules.h"

namespace hai {
namespace {

// S: pp model stages, or 2 pp under DualPipeV, which folds the model into a V (each rank holds two stages).
std::int64_t pipeline_stage_count(const ParallelConfig& parallel) {
  return parallel.schedule == PipelineSchedule::dualpipev ? 2 * parallel.pp : parallel.pp;
}

void validate_world(const ParallelConfig& parallel, int world_size, const KeyLines& lines) {
  const std::int64_t pp_tp = parallel.pp * parallel.tp;
  if (!parallel.dp && world_size % pp_tp != 0) {
    throw_config_error(lines, "parallel.dp",
                       fmt::format("auto needs the {} ranks of the job to be a multiple of pp x tp = {} x {} = {}",
                                   world_size, parallel.pp, parallel.tp, pp_tp));
  }
  if (parallel.dp && pp_tp * *parallel.dp != world_size) {
    throw_config_error(lines, "parallel.dp",
                       fmt::format("pp x dp x tp = {} x {} x {} = {} ranks, but the job has {}", parallel.pp,
                                   *parallel.dp, parallel.tp, pp_tp * *parallel.dp, world_size));
  }
}

// Tensor parallelism splits heads, the dense and shared-expert FFN widths (evenly) and the vocabulary (padded: at
// least one row a rank); under FP8 a split must not cut a 128-wide weight tile (docs/design/tensor-parallel.md).
void validate_tensor_split(const Config& config, const KeyLines& lines) {
  const ModelConfig& model = config.model;
  const std::int64_t tp = config.parallel.tp;
  if (model.num_heads % tp != 0) {
    throw_config_error(lines, "model.num_heads",
                       fmt::format("{} heads cannot be split over parallel.tp = {} ranks", model.num_heads, tp));
  }
  if (config.parallel.sequence_parallel && tp == 1) {
    throw_config_error(lines, "parallel.sequence_parallel", "needs parallel.tp > 1 (it splits the tokens over the tp ranks)");
  }
  if (config.parallel.sequence_parallel && config.train.seq_len % tp != 0) {
    throw_config_error(lines, "train.seq_len",
                       fmt::format("{} tokens cannot be split over parallel.tp = {} ranks (parallel.sequence_parallel)",
                                   config.train.seq_len, tp));
  }
  if (tp == 1) return;
  if (model.dense_ffn_size % tp != 0) {
    throw_config_error(lines, "model.dense_ffn_size",
                       fmt::format("{} columns cannot be split over parallel.tp = {} ranks", model.dense_ffn_size, tp));
  }
  const std::int64_t shared_width = model.moe.expert_ffn_size * model.moe.shared_experts;
  if (shared_width % tp != 0) {
    throw_config_error(lines, "model.moe.expert_ffn_size",
                       fmt::format("the shared experts' {} columns (expert_ffn_size x shared_experts) cannot be split "
                                   "over parallel.tp = {} ranks", shared_width, tp));
  }
  if (model.vocab_size < tp) {
    throw_config_error(lines, "model.vocab_size",
                       fmt::format("{} rows cannot be split over parallel.tp = {} ranks", model.vocab_size, tp));
  }
  if (config.precision.mode != PrecisionMode::fp8) return;
  constexpr std::int64_t kTile = 128;
  const std::int64_t heads = model.num_heads / tp;
  const std::vector<std::pair<const char*, std::int64_t>> shard_widths = {
      {"model.num_heads", heads * (model.qk_nope_head_dim + model.qk_rope_head_dim)},  // q_b_proj's rows
      {"model.num_heads", heads * (model.qk_nope_head_dim + model.v_head_dim)},        // kv_b_proj's rows
      {"model.num_heads", heads * model.v_head_dim},                                   // o_proj's columns
      {"model.dense_ffn_size", model.dense_ffn_size / tp},
      {"model.moe.expert_ffn_size", shared_width / tp}};
  for (const auto& [key, width] : shard_widths) {
    if (width % kTile != 0) {
      throw_config_error(lines, key,
                         fmt::format("a tp shard {} wide would cut a {}-wide FP8 tile (precision.mode fp8 at "
                                     "parallel.tp = {}): each rank's width must be a multiple of {}",
                                     width, kTile, tp, kTile));
    }
  }
}

void validate_sharding(const Config& config, std::int64_t dp, const KeyLines& lines) {
  const ParallelConfig& parallel = config.parallel;
  validate_tensor_split(config, lines);
  if ((dp * parallel.tp) % parallel.ep != 0) {
    throw_config_error(lines, "parallel.ep",
                       fmt::format("must divide dp x tp = {} x {} = {} (got {})", dp, parallel.tp, dp * parallel.tp,
                                   parallel.ep));
  }
  if (config.model.moe.routed_experts % parallel.ep != 0) {
    throw_config_error(lines, "model.moe.routed_experts",
                       fmt::format("{} experts cannot be split over parallel.ep = {} ranks",
                                   config.model.moe.routed_experts, parallel.ep));
  }
  const std::int64_t stages = pipeline_stage_count(parallel);
  if (config.model.num_layers < stages) {
    throw_config_error(lines, "model.num_layers",
                       fmt::format("{} layers cannot fill {} pipeline stages", config.model.num_layers, stages));
  }
}

// Explicit layers per stage: one count per stage (each > 0 is a per-key rule), all the model's layers.
void validate_stage_layers(const Config& config, const KeyLines& lines) {
  const std::vector<std::int64_t>& counts = config.parallel.stage_layers;
  if (counts.empty()) return;
  const std::int64_t stages = pipeline_stage_count(config.parallel);
  if (static_cast<std::int64_t>(counts.size()) != stages) {
    throw_config_error(lines, "parallel.stage_layers",
                       fmt::format("{} counts for {} pipeline stages (pp {} under {})", counts.size(), stages,
                                   config.parallel.pp, to_string(config.parallel.schedule)));
  }
  const std::int64_t total = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  if (total != config.model.num_layers) {
    throw_config_error(lines, "parallel.stage_layers",
                       fmt::format("the stages hold {} layers, model.num_layers is {}", total,
                                   config.model.num_layers));
  }
}

void validate_batch(const Config& config, std::int64_t dp, const KeyLines& lines) {
  const TrainConfig& train = config.train;
  const IntOrAuto& micro_batches = config.parallel.micro_batches;
  if (!micro_batches && train.global_batch_size % (train.micro_batch_size * dp) != 0) {
    throw_config_error(lines, "train.global_batch_size",
                       fmt::format("must be a multiple of micro_batch_size x dp = {} x {} = {} (got {})",
                                   train.micro_batch_size, dp, train.micro_batch_size * dp, train.global_batch_size));
  }
  if (micro_batches && train.micro_batch_size * *micro_batches * dp != train.global_batch_size) {
    throw_config_error(lines, "parallel.micro_batches",
                       fmt::format("micro_batch_size x micro_batches x dp = {} x {} x {} = {}, but "
                                   "train.global_batch_size is {}",
                                   train.micro_batch_size, *micro_batches, dp,
                                   train.micro_batch_size * *micro_batches * dp, train.global_batch_size));
  }
}

// NOTE: every micro-batch's tokens are read before the step's first forward (trainer.cc): the count is bounded.
constexpr std::int64_t kMaxMicroBatches = std::int64_t{1} << 16;

void validate_micro_batch_count(std::int64_t micro_batches, const KeyLines& lines) {
  if (micro_batches > kMaxMicroBatches) {
    throw_config_error(lines, "train.global_batch_size",
                       fmt::format("{} micro-batches per step and dp rank (global_batch_size / (micro_batch_size x "
                                   "dp)) exceed the limit of {}: raise train.micro_batch_size",
                                   micro_batches, kMaxMicroBatches));
  }
}

void validate_schedule(const ParallelConfig& parallel, std::int64_t micro_batches, const KeyLines& lines) {
  if (parallel.schedule == PipelineSchedule::dualpipe && parallel.pp % 2 != 0) {
    throw_config_error(lines, "parallel.pp",
                       fmt::format("dualpipe needs an even number of pipeline ranks (got {})", parallel.pp));
  }
  const bool dualpipe = parallel.schedule == PipelineSchedule::dualpipe;
  if (dualpipe && (micro_batches % 2 != 0 || micro_batches < 2 * parallel.pp)) {
    throw_config_error(lines, "parallel.micro_batches",
                       fmt::format("dualpipe needs an even number of micro-batches >= 2 x pp = {} (got {})",
                                   2 * parallel.pp, micro_batches));
  }
  if (parallel.schedule == PipelineSchedule::dualpipev && micro_batches < 2 * parallel.pp) {
    throw_config_error(lines, "parallel.micro_batches",
                       fmt::format("dualpipev needs at least 2 x pp = {} micro-batches (got {})", 2 * parallel.pp,
                                   micro_batches));
  }
}

}  // namespace

void validate_layout(const Config& config, int world_size, const KeyLines& lines) {
  validate_world(config.parallel, world_size, lines);
  const std::int64_t dp = resolved_dp(config, world_size);
  validate_sharding(config, dp, lines);
  validate_stage_layers(config, lines);
  validate_batch(config, dp, lines);
  validate_micro_batch_count(resolved_micro_batches(config, world_size), lines);
  validate_schedule(config.parallel, resolved_micro_batches(config, world_size), lines);
}

}  // namespace hai
