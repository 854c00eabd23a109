#include "framework/config/schema.h"

#include <type_traits>
#include <utility>

#include "framework/config/key_rules.h"
#include "framework/config/value_codec.h"

namespace hai {
namespace {

template <class Access>
using ValueOf = std::remove_cvref_t<decltype(std::declval<Access>()(std::declval<Config&>()))>;

template <class Access>
ConfigKey make_key(std::string path, Access access, std::string doc, KeyRule<ValueOf<Access>> rule = {}) {
  using Codec = ValueCodec<ValueOf<Access>>;
  ConfigKey key{path, Codec::type_name(), rule.text, std::move(doc), {}, {}, {}, {}};
  key.read = [access, path](Config& config, const YAML::Node& node, const KeyLines& lines) {
    access(config) = Codec::read(node, path, lines);
  };
  key.text = [access](const Config& config) { return Codec::text(access(config)); };
  key.json = [access](const Config& config) { return Codec::json(access(config)); };
  key.check = [access, rule](const Config& config) -> std::optional<std::string> {
    if (!rule.holds || rule.holds(access(config))) return std::nullopt;
    return "must be " + rule.text + " (got " + Codec::text(access(config)) + ")";
  };
  return key;
}

// NOTE: the macro makes the key path the member's own path in Config, so the two cannot drift apart.
#define HAI_CONFIG_KEY(member, ...) \
  make_key(#member, [](auto& config) -> auto& { return config.member; }, __VA_ARGS__)

std::vector<ConfigKey> model_keys() {
  using I = std::int64_t;
  return {
      HAI_CONFIG_KEY(model.vocab_size, "tokens in the vocabulary (embedding rows, head columns)",
                     in_range<I>(1, 2147483647)),
      HAI_CONFIG_KEY(model.hidden_size, "model width h", in_range<I>(1, I{1} << 20)),
      HAI_CONFIG_KEY(model.num_layers, "decoder layers of the main model (MTP layers not counted)",
                     in_range<I>(1, I{1} << 14)),
      HAI_CONFIG_KEY(model.first_dense_layers, "the first layers use a dense FFN instead of MoE",
                     in_range<I>(0, I{1} << 14)),
      HAI_CONFIG_KEY(model.dense_ffn_size, "FFN width of the dense layers", in_range<I>(1, I{1} << 22)),
      HAI_CONFIG_KEY(model.num_heads, "MLA attention heads", in_range<I>(1, I{1} << 14)),
      HAI_CONFIG_KEY(model.q_lora_rank, "rank of the query down-projection", in_range<I>(1, I{1} << 20)),
      HAI_CONFIG_KEY(model.kv_lora_rank, "rank of the compressed key/value latent c_kv", in_range<I>(1, I{1} << 20)),
      HAI_CONFIG_KEY(model.qk_nope_head_dim, "per-head query/key dims without RoPE", in_range<I>(1, I{1} << 16)),
      HAI_CONFIG_KEY(model.qk_rope_head_dim, "per-head query/key dims with RoPE (even)", in_range<I>(1, I{1} << 16)),
      HAI_CONFIG_KEY(model.v_head_dim, "per-head value dims", in_range<I>(1, I{1} << 16)),
      HAI_CONFIG_KEY(model.norm_eps, "RMSNorm epsilon", positive_up_to(1.0)),
      HAI_CONFIG_KEY(model.init_std, "standard deviation of the normal weight init", positive_up_to(10.0)),
      HAI_CONFIG_KEY(model.max_seq_len, "longest sequence the RoPE tables cover", in_range<I>(1, I{1} << 24)),
      HAI_CONFIG_KEY(model.rope.theta, "RoPE base frequency", positive_up_to()),
      HAI_CONFIG_KEY(model.rope.yarn.factor, "YaRN context extension factor; 1 = YaRN off", in_range(1.0, 1.0e6)),
      HAI_CONFIG_KEY(model.rope.yarn.original_max_position, "context length before YaRN extension",
                     in_range<I>(1, I{1} << 24)),
      HAI_CONFIG_KEY(model.rope.yarn.beta_fast, "YaRN ramp: rotations above which dims are not interpolated",
                     positive_up_to(1.0e6)),
      HAI_CONFIG_KEY(model.rope.yarn.beta_slow, "YaRN ramp: rotations below which dims are fully interpolated",
                     positive_up_to(1.0e6)),
      HAI_CONFIG_KEY(model.rope.yarn.mscale, "YaRN attention scale: softmax scale x (0.1 mscale ln(factor) + 1)^2",
                     in_range(0.0, 1.0e6)),
      HAI_CONFIG_KEY(model.moe.routed_experts, "routed experts per MoE layer", in_range<I>(1, I{1} << 16)),
      HAI_CONFIG_KEY(model.moe.shared_experts, "shared experts per MoE layer, seen by every token",
                     in_range<I>(0, I{1} << 10)),
      HAI_CONFIG_KEY(model.moe.experts_per_token, "routed experts each token is sent to (top-k)",
                     in_range<I>(1, I{1} << 16)),
      HAI_CONFIG_KEY(model.moe.expert_ffn_size, "FFN width of one expert", in_range<I>(1, I{1} << 22)),
      HAI_CONFIG_KEY(model.moe.groups, "expert groups for group-limited routing", in_range<I>(1, I{1} << 16)),
      HAI_CONFIG_KEY(model.moe.groups_per_token, "groups a token may route to (top groups by group score)",
                     in_range<I>(1, I{1} << 16)),
      HAI_CONFIG_KEY(model.moe.routed_scaling_factor, "multiplies the renormalised top-k weights",
                     positive_up_to(1.0e6)),
      HAI_CONFIG_KEY(model.moe.bias_update_speed, "gamma of the auxiliary-loss-free bias update; 0 = frozen bias",
                     in_range(0.0, 1.0e6)),
      HAI_CONFIG_KEY(model.moe.balance_loss_alpha, "weight of the sequence-wise balance loss; 0 = off",
                     in_range(0.0, 1.0e6)),
      HAI_CONFIG_KEY(model.mtp_depth, "multi-token prediction modules; 0 = no MTP", in_range<I>(0, 64)),
      HAI_CONFIG_KEY(model.mtp_loss_weight, "lambda: loss = main + lambda / depth x sum of MTP losses",
                     in_range(0.0, 1.0e6)),
      HAI_CONFIG_KEY(model.head_chunk_tokens,
                     "tokens the output head turns into logits at a time (memory only: results are the same); "
                     "0 = as many as keep one chunk's fp32 logits within 256 MiB", in_range<I>(0, I{1} << 31)),
  };
}

std::vector<ConfigKey> parallel_and_train_keys() {
  using I = std::int64_t;
  return {
      HAI_CONFIG_KEY(parallel.dp, "data-parallel (ZeRO-1) ranks; auto = world / (pp x tp)",
                     positive_or_auto_up_to(I{1} << 20)),
      HAI_CONFIG_KEY(parallel.pp, "pipeline-parallel ranks", in_range<I>(1, I{1} << 20)),
      HAI_CONFIG_KEY(parallel.tp,
                     "tensor-parallel ranks (MPI on CPU ranks, NCCL on GPUs): attention heads, the dense and "
                     "shared-expert FFN columns and the vocabulary split over them; divides num_heads, dense_ffn_size "
                     "and the shared experts' width", in_range<I>(1, I{1} << 20)),
      HAI_CONFIG_KEY(parallel.ep, "expert-parallel ranks; divides dp x tp", in_range<I>(1, I{1} << 20)),
      HAI_CONFIG_KEY(parallel.sequence_parallel, "split the tokens over the tp ranks outside the tensor-parallel "
                                                 "regions (residual stream, norms, MoE router and routed experts); "
                                                 "needs tp > 1 and seq_len divisible by tp"),
      HAI_CONFIG_KEY(parallel.overlap_param_gather,
                     "ZeRO-1's all-gathers of the updated expert weights run under the next forward pass, each layer "
                     "waiting for its own, instead of in the optimizer step (pp > 1: joined before the pipeline starts)"),
      HAI_CONFIG_KEY(parallel.schedule, "pipeline schedule"),
      HAI_CONFIG_KEY(parallel.micro_batches,
                     "micro-batches per step and dp rank; auto = global_batch_size / (micro_batch_size x dp)",
                     positive_or_auto_up_to(I{1} << 16)),
      HAI_CONFIG_KEY(parallel.stage_layers,
                     "decoder layers of each pipeline stage in stage order (pp counts, 2 x pp under dualpipev); "
                     "[] = balanced by a cost model", each_in_range(1, I{1} << 14)),
      HAI_CONFIG_KEY(train.steps, "optimizer steps of the run", in_range<I>(1, I{1} << 40)),
      HAI_CONFIG_KEY(train.seq_len, "tokens per training sequence", in_range<I>(1, I{1} << 24)),
      HAI_CONFIG_KEY(train.micro_batch_size, "sequences per micro-batch", in_range<I>(1, I{1} << 24)),
      HAI_CONFIG_KEY(train.global_batch_size, "sequences per optimizer step (= micro_batch_size x micro_batches x dp)",
                     in_range<I>(1, I{1} << 31)),
      HAI_CONFIG_KEY(train.eval_interval, "evaluate every this many steps; 0 = never", in_range<I>(0, I{1} << 40)),
      HAI_CONFIG_KEY(train.eval_batches, "micro-batches (of micro_batch_size windows, read in order) per evaluation",
                     in_range<I>(1, I{1} << 24)),
      HAI_CONFIG_KEY(train.seed, "seed of the weight init, data order and every other random stream",
                     non_negative<I>()),
      HAI_CONFIG_KEY(train.recompute,
                     "activations recomputed in the backward: none; selective = RMSNorm outputs, MLA up-projections, "
                     "SwiGLU outputs; full = each decoder layer from its input"),
      HAI_CONFIG_KEY(train.max_skipped_steps,
                     "consecutive steps with non-finite gradients (skipped updates) that stop the run with an error; "
                     "0 = no limit",
                     in_range<I>(0, I{1} << 40)),
  };
}

std::vector<ConfigKey> optimizer_and_precision_keys() {
  using I = std::int64_t;
  return {
      HAI_CONFIG_KEY(optimizer.lr, "peak learning rate", positive_up_to()),
      HAI_CONFIG_KEY(optimizer.min_lr, "learning rate at the end of the decay (<= lr)", in_range(0.0, kMaxFloat32)),
      HAI_CONFIG_KEY(optimizer.warmup_steps, "steps of linear warm-up from 0 to lr", in_range<I>(0, I{1} << 40)),
      HAI_CONFIG_KEY(optimizer.schedule, "learning-rate schedule after warm-up (see below)"),
      HAI_CONFIG_KEY(optimizer.deepseek_v3.decay_start, "deepseek_v3: cosine decay starts (fraction of steps)",
                     fraction()),
      HAI_CONFIG_KEY(optimizer.deepseek_v3.decay_end, "deepseek_v3: cosine decay reaches min_lr (fraction of steps)",
                     fraction()),
      HAI_CONFIG_KEY(optimizer.deepseek_v3.final_start, "deepseek_v3: lr steps down to final_lr (fraction of steps)",
                     fraction()),
      HAI_CONFIG_KEY(optimizer.deepseek_v3.final_lr, "deepseek_v3: learning rate of the last stage (<= min_lr)",
                     in_range(0.0, kMaxFloat32)),
      HAI_CONFIG_KEY(optimizer.betas, "AdamW beta1, beta2", betas_in_range()),
      HAI_CONFIG_KEY(optimizer.eps, "AdamW epsilon", positive_up_to()),
      HAI_CONFIG_KEY(optimizer.weight_decay, "AdamW decoupled weight decay", in_range(0.0, kMaxFloat32)),
      HAI_CONFIG_KEY(optimizer.grad_clip, "clip the global gradient norm to this; 0 = no clipping",
                     in_range(0.0, kMaxFloat32)),
      HAI_CONFIG_KEY(optimizer.moment_dtype, "storage type of the AdamW moments"),
      HAI_CONFIG_KEY(precision.mode, "compute precision of the GEMMs (master weights and grads stay fp32)"),
      HAI_CONFIG_KEY(precision.fp8.pow2_scales, "fp8: round activation scales to powers of two"),
      HAI_CONFIG_KEY(precision.loss_scale.init, "fp16: initial dynamic loss scale", positive_up_to()),
      HAI_CONFIG_KEY(precision.loss_scale.window, "fp16: clean steps before the loss scale doubles",
                     in_range<I>(1, I{1} << 40)),
      HAI_CONFIG_KEY(precision.loss_scale.min, "fp16: the loss scale never halves below this", positive_up_to()),
  };
}

std::vector<ConfigKey> io_and_runtime_keys() {
  using I = std::int64_t;
  return {
      HAI_CONFIG_KEY(data.source, "indexed: a Megatron indexed dataset; synthetic: seeded random tokens"),
      HAI_CONFIG_KEY(data.path, "indexed dataset prefix (PATH.bin + PATH.idx); required when source is indexed"),
      HAI_CONFIG_KEY(data.valid_fraction, "fraction of the dataset's documents held out for evaluation",
                     KeyRule<double>{"in [0, 1)", [](const double& value) { return value >= 0.0 && value < 1.0; }}),
      HAI_CONFIG_KEY(data.eval_path, "indexed dataset prefix for evaluation; empty = use valid_fraction"),
      HAI_CONFIG_KEY(checkpoint.dir, "directory of the step_NNNNNNNN checkpoints", not_empty()),
      HAI_CONFIG_KEY(checkpoint.save, "write checkpoints; false = never (benchmark runs), resuming still reads them"),
      HAI_CONFIG_KEY(checkpoint.interval, "save every this many steps; 0 = only at the end",
                     in_range<I>(0, I{1} << 40)),
      HAI_CONFIG_KEY(checkpoint.keep, "newest checkpoints kept; 0 = keep all", in_range<I>(0, I{1} << 20)),
      HAI_CONFIG_KEY(checkpoint.resume, "auto (latest in dir, if any), none, or a checkpoint directory", not_empty()),
      HAI_CONFIG_KEY(ema.enabled, "keep an exponential moving average of the parameters in CPU memory"),
      HAI_CONFIG_KEY(ema.decay, "EMA decay per step", open_fraction()),
      HAI_CONFIG_KEY(ema.eval, "evaluate (periodically and with --eval-only) with the EMA weights; needs ema.enabled"),
      HAI_CONFIG_KEY(logging.run_dir, "directory of config.yaml, configs/, train.log, metrics.jsonl, tensorboard/",
                     not_empty()),
      HAI_CONFIG_KEY(logging.interval, "print a log line every this many steps", in_range<I>(1, I{1} << 40)),
      HAI_CONFIG_KEY(logging.peak_tflops, "peak TFLOP/s per GPU, the MFU denominator (MFU is n/a on the CPU)",
                     positive_up_to(1.0e9)),
      HAI_CONFIG_KEY(logging.tensorboard, "also write the metrics as TensorBoard event files in <run_dir>/tensorboard"),
      HAI_CONFIG_KEY(runtime.device,
                     "where to compute; auto = cuda when every rank has a GPU of its own (a node has at least as "
                     "many GPUs as ranks), else cpu"),
      HAI_CONFIG_KEY(runtime.deterministic, "forbid non-deterministic GPU kernels (atomics in reductions)"),
      HAI_CONFIG_KEY(runtime.collective_timeout_s, "abort every rank when a collective hangs this long",
                     in_range<I>(1, I{1} << 24)),
      HAI_CONFIG_KEY(runtime.device_memory_gib,
                     "GiB of one GPU the memory plan must fit: --dry-run's fits verdict, and on a GPU a start-up check "
                     "(a larger plan is a config error before anything is allocated)",
                     in_range(1.0, 1.0e6)),
      HAI_CONFIG_KEY(runtime.nvlink_gbps,
                     "GB/s per GPU between the GPUs of one node (NVLink), for --dry-run's communication plan",
                     in_range(0.1, 1.0e5)),
      HAI_CONFIG_KEY(runtime.infiniband_gbps,
                     "GB/s per GPU between nodes (InfiniBand), for --dry-run's communication plan",
                     in_range(0.1, 1.0e5)),
      HAI_CONFIG_KEY(runtime.gpus_per_node,
                     "GPUs of one node (consecutive ranks) for --dry-run's communication plan: a group inside a node "
                     "uses NVLink, one across nodes InfiniBand",
                     in_range<I>(1, 4096)),
      HAI_CONFIG_KEY(runtime.achieved_tflops,
                     "model TFLOP/s one GPU sustains inside a pipeline chunk, for --dry-run's communication plan "
                     "(the compute time that hides the traffic); DeepSeek-V3 averaged about 400 over its run (docs/scale.md)",
                     in_range(0.001, 1.0e6)),
      HAI_CONFIG_KEY(runtime.stop_signals,
                     "signals that stop training gracefully: every rank finishes the step, a checkpoint is saved, exit "
                     "code 5 (docs/reliability.md); a second signal aborts at once",
                     known_stop_signals()),
  };
}

#undef HAI_CONFIG_KEY

std::vector<ConfigKey> build_schema() {
  std::vector<ConfigKey> schema;
  for (auto part : {model_keys(), parallel_and_train_keys(), optimizer_and_precision_keys(), io_and_runtime_keys()}) {
    for (auto& key : part) schema.push_back(std::move(key));
  }
  return schema;
}

}  // namespace

const std::vector<ConfigKey>& config_schema() {
  static const std::vector<ConfigKey> schema = build_schema();
  return schema;
}

const ConfigKey* find_config_key(const std::string& path) {
  for (const ConfigKey& key : config_schema()) {
    if (key.path == path) return &key;
  }
  return nullptr;
}

bool is_config_section(const std::string& path) {
  for (const ConfigKey& key : config_schema()) {
    if (key.path.size() > path.size() && key.path.starts_with(path) && key.path[path.size()] == '.') return true;
  }
  return false;
}

}  // namespace hai
