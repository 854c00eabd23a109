#pragma once
// hai::Config: the typed experiment config (docs/architecture.md "Config"). The default member values here ARE the
// defaults: the schema (schema.h) reads them for docs/config.md and the effective config. Model sizes default to the
// tiny CPU model; training hyper-parameters default to the DeepSeek-V3 recipe.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hai {

// An integer that may be "auto" (std::nullopt) until the world size is known: parallel.dp, parallel.micro_batches.
using IntOrAuto = std::optional<std::int64_t>;

enum class PipelineSchedule { one_f_one_b, dualpipe, dualpipev };
enum class LrSchedule { cosine, constant, deepseek_v3 };
enum class PrecisionMode { fp32, bf16, fp16, fp8 };
enum class MomentDType { fp32, bf16 };
// What a decoder layer's forward keeps for its backward and what the backward recomputes (docs/design/recompute.md).
enum class RecomputeMode { none, selective, full };
enum class DataSource { indexed, synthetic };
enum class RuntimeDevice { cpu, cuda, automatic };

struct YarnConfig {
  double factor = 1.0;  // 1 = YaRN off
  std::int64_t original_max_position = 4096;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 1.0;
  bool operator==(const YarnConfig&) const = default;
};

struct RopeConfig {
  double theta = 10000.0;
  YarnConfig yarn;
  bool operator==(const RopeConfig&) const = default;
};

struct MoeConfig {
  std::int64_t routed_experts = 8;
  std::int64_t shared_experts = 1;
  std::int64_t experts_per_token = 2;
  std::int64_t expert_ffn_size = 32;
  std::int64_t groups = 4;
  std::int64_t groups_per_token = 2;
  double routed_scaling_factor = 2.5;
  double bias_update_speed = 0.001;
  double balance_loss_alpha = 0.0001;
  bool operator==(const MoeConfig&) const = default;
};

struct ModelConfig {
  std::int64_t vocab_size = 257;
  std::int64_t hidden_size = 64;
  std::int64_t num_layers = 3;
  std::int64_t first_dense_layers = 1;
  std::int64_t dense_ffn_size = 128;
  std::int64_t num_heads = 4;
  std::int64_t q_lora_rank = 32;
  std::int64_t kv_lora_rank = 16;
  std::int64_t qk_nope_head_dim = 16;
  std::int64_t qk_rope_head_dim = 8;
  std::int64_t v_head_dim = 16;
  double norm_eps = 1e-6;
  double init_std = 0.006;
  std::int64_t max_seq_len = 64;
  RopeConfig rope;
  MoeConfig moe;
  std::int64_t mtp_depth = 1;
  double mtp_loss_weight = 0.3;
  std::int64_t head_chunk_tokens = 0;  // tokens per chunk of the output head's logits; 0: by memory
  bool operator==(const ModelConfig&) const = default;
};

struct ParallelConfig {
  IntOrAuto dp;  // auto: world / (pp * tp)
  std::int64_t pp = 1;
  std::int64_t tp = 1;
  std::int64_t ep = 1;
  bool sequence_parallel = false;
  bool overlap_param_gather = true;  // ZeRO-1's in-place expert all-gathers left running under the next forward
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  IntOrAuto micro_batches;  // auto: global_batch_size / (micro_batch_size * dp)
  std::vector<std::int64_t> stage_layers;  // decoder layers per pipeline stage; empty: balanced by a cost model
  bool operator==(const ParallelConfig&) const = default;
};

struct TrainConfig {
  std::int64_t steps = 100;
  std::int64_t seq_len = 64;
  std::int64_t micro_batch_size = 4;
  std::int64_t global_batch_size = 8;  // sequences per optimizer step
  std::int64_t eval_interval = 0;      // 0 = no periodic evaluation
  std::int64_t eval_batches = 4;
  std::int64_t seed = 1234;
  RecomputeMode recompute = RecomputeMode::none;
  std::int64_t max_skipped_steps = 25;  // consecutive non-finite steps that end the run; 0 = no limit
  bool operator==(const TrainConfig&) const = default;
};

// The stage boundaries of the DeepSeek-V3 schedule, as fractions of train.steps (V3: 10T, 14.3T and 14.63T of
// 14.8T tokens): constant lr until decay_start, cosine to min_lr until decay_end, min_lr until final_start,
// final_lr after.
struct DeepseekV3ScheduleConfig {
  double decay_start = 0.676;
  double decay_end = 0.966;
  double final_start = 0.989;
  double final_lr = 7.3e-6;
  bool operator==(const DeepseekV3ScheduleConfig&) const = default;
};

struct OptimizerConfig {
  double lr = 2.2e-4;
  double min_lr = 2.2e-5;
  std::int64_t warmup_steps = 2000;
  LrSchedule schedule = LrSchedule::cosine;
  DeepseekV3ScheduleConfig deepseek_v3;
  std::array<double, 2> betas = {0.9, 0.95};
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0;  // 0 = no clipping
  MomentDType moment_dtype = MomentDType::bf16;
  bool operator==(const OptimizerConfig&) const = default;
};

struct Fp8Config {
  bool pow2_scales = false;  // round activation scales to powers of two
  bool operator==(const Fp8Config&) const = default;
};

struct LossScaleConfig {
  double init = 65536.0;
  std::int64_t window = 2000;  // clean steps before the scale doubles
  double min = 1.0;
  bool operator==(const LossScaleConfig&) const = default;
};

struct PrecisionConfig {
  PrecisionMode mode = PrecisionMode::bf16;
  Fp8Config fp8;
  LossScaleConfig loss_scale;
  bool operator==(const PrecisionConfig&) const = default;
};

struct DataConfig {
  DataSource source = DataSource::indexed;
  std::string path;  // indexed dataset prefix (prefix.bin + prefix.idx)
  double valid_fraction = 0.0;
  std::string eval_path;
  bool operator==(const DataConfig&) const = default;
};

struct CheckpointConfig {
  std::string dir = "checkpoints";
  bool save = true;           // false: no checkpoint is written (benchmark runs)
  std::int64_t interval = 0;  // 0 = only at the end
  std::int64_t keep = 3;      // 0 = keep all
  std::string resume = "auto";  // auto | none | PATH
  bool operator==(const CheckpointConfig&) const = default;
};

struct EmaConfig {
  bool enabled = false;
  double decay = 0.999;
  bool eval = false;  // evaluate with the EMA weights
  bool operator==(const EmaConfig&) const = default;
};

struct LoggingConfig {
  std::string run_dir = "runs/default";
  std::int64_t interval = 10;
  double peak_tflops = 989.0;  // per GPU, the MFU denominator
  bool tensorboard = false;    // also write <run_dir>/tensorboard/ event files
  bool operator==(const LoggingConfig&) const = default;
};

struct RuntimeConfig {
  RuntimeDevice device = RuntimeDevice::automatic;
  bool deterministic = false;
  std::int64_t collective_timeout_s = 600;
  double device_memory_gib = 80.0;  // one GPU's memory the plan must fit (memory_estimate.h)
  // The communication plan (--dry-run, model/comm_plan.h): link bandwidths per GPU, DeepSeek-V3's H800 nodes by
  // default, and the model FLOP rate a GPU sustains inside a chunk, whose compute hides the traffic.
  double nvlink_gbps = 160.0;      // GB/s per GPU between GPUs of one node
  double infiniband_gbps = 50.0;   // GB/s per GPU between nodes
  std::int64_t gpus_per_node = 8;  // consecutive ranks share a node
  double achieved_tflops = 400.0;  // model TFLOP/s per GPU
  std::vector<std::string> stop_signals = {"SIGTERM", "SIGINT", "SIGUSR1"};  // graceful stop (stop_signal.h)
  bool operator==(const RuntimeConfig&) const = default;
};

struct Config {
  ModelConfig model;
  ParallelConfig parallel;
  TrainConfig train;
  OptimizerConfig optimizer;
  PrecisionConfig precision;
  DataConfig data;
  CheckpointConfig checkpoint;
  EmaConfig ema;
  LoggingConfig logging;
  RuntimeConfig runtime;
  bool operator==(const Config&) const = default;
};

}  // namespace hai
