#include "apps/hai-train/trainer.h"

#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "apps/hai-train/memory_fit.h"
#include "apps/hai-train/stage_layout.h"
#include "apps/hai-train/training_device.h"
#include "framework/comm/single_rank_communicator.h"
#include "framework/core/launch.h"
#include "framework/metrics/expert_load_stats.h"
#include "framework/metrics/mfu.h"
#include "framework/optim/lr_schedule.h"
#include "framework/config/config_enums.h"
#include "model/gradient_buckets.h"
#include "model/parameters.h"
#include "model/router_biases.h"
#include "model/sequence_parallel_gradients.h"
#include "parallel/rank_values.h"

namespace hai {
namespace {

DType compute_dtype(PrecisionMode mode) {
  switch (mode) {
    case PrecisionMode::fp32: return DType::f32;
    case PrecisionMode::bf16: return DType::bf16;
    case PrecisionMode::fp16: return DType::f16;
    // NOTE: fp8 GEMMs read the store's FP8 weight copies; the layers kept in higher precision read bf16.
    case PrecisionMode::fp8: return DType::bf16;
  }
  HAI_THROW("unknown precision.mode {}", static_cast<int>(mode));
}

// The store of a rank's share: its dense parameters (those read in fp32 first), then its routed experts, then the
// routing biases (the order ZeRO-1 needs); the fp32 masters ZeRO-1 shards over `groups` are not in it (zero1.h).
ParameterStore make_store(const Config& config, const std::vector<HeldParameter>& share, const ParallelGroups& groups,
                          Device device) {
  Fp8WeightOptions fp8{.enabled = config.precision.mode == PrecisionMode::fp8,
                       .pow2_activation_scales = config.precision.fp8.pow2_scales};
  DType dtype = compute_dtype(config.precision.mode);
  ParameterStore store(zero1_store_order(share_specs(share), reads_fp32_value), device, dtype, fp8,
                       zero1_sharded_master(dtype, groups.dp->size(), groups.expert_dp->size(), reads_fp32_value));
  // NOTE: a box split over tp draws the values of its elements in the whole tensor: the same model at any tp.
  std::unordered_map<std::string, const HeldParameter*> held;
  for (const HeldParameter& parameter : share) held.emplace(parameter.spec.name, &parameter);
  store.initialize(static_cast<uint64_t>(config.train.seed), config.model.init_std,
                   [&held](const Parameter& parameter) -> std::optional<GlobalBox> {
                     const HeldParameter& box = *held.at(parameter.spec.name);
                     if (!box.split_over_tp) return std::nullopt;
                     return GlobalBox{.global_shape = box.spec.shape, .offsets = box.box_offsets};
                   });
  store.refresh_compute_copy();
  return store;
}

// The device of ranks given no GPU: the CPU, unless the config asks for cuda.
Device cpu_ranks_device(RuntimeDevice setting) {
  HAI_CHECK(setting != RuntimeDevice::cuda,
            "runtime.device cuda on several ranks needs a world that moves device tensors (training_world.h)");
  return Device::cpu();
}

// The most windows evaluate() scores of a whole source (data.eval_path): 2^31.
constexpr uint64_t kMaxWholeEvalWindows = uint64_t{1} << 31;

DataLoaderOptions loader_options(const Config& config, const Communicator& dp) {
  return {.micro_batch_size = config.train.micro_batch_size,
          .dp_rank = dp.rank(),
          .dp_size = dp.size(),
          .seed = static_cast<uint64_t>(config.train.seed)};
}

// The mean of a step's micro-batch losses.
struct StepLosses {
  double objective = 0, lm = 0, mtp = 0, balance = 0;

  void add(const MicroBatchLosses& losses, double mtp_loss_weight, double weight) {
    objective += weight * losses.objective(mtp_loss_weight);
    lm += weight * losses.lm.mean();
    mtp += weight * losses.mtp_mean();
    balance += weight * losses.balance;
  }

  // The means over the DP group (each rank's are means over the same number of micro-batches).
  StepLosses mean_over(Communicator& dp) const {
    std::vector<double> sums = sum_over_ranks(dp, std::vector<double>{objective, lm, mtp, balance});
    double ranks = dp.size();
    return {sums[0] / ranks, sums[1] / ranks, sums[2] / ranks, sums[3] / ranks};
  }
};

// The step's losses, its one read of them: loss_sums [micro-batches, loss slots] on the device.
StepLosses read_step_losses(const Tensor& loss_sums, const std::vector<CountedTokens>& counted, double mtp_loss_weight,
                            Communicator& dp) {
  auto micro_batches = static_cast<int64_t>(counted.size());
  OwnedTensor host_sums = host_copy(loss_sums);
  StepLosses losses;
  for (int64_t micro_batch = 0; micro_batch < micro_batches; ++micro_batch) {
    Tensor sums = host_sums.tensor().slice(micro_batch, micro_batch + 1).reshape(Shape{host_sums.shape()[1]});
    losses.add(read_losses(sums, counted[static_cast<size_t>(micro_batch)]), mtp_loss_weight,
               1.0 / static_cast<double>(micro_batches));
  }
  return losses.mean_over(dp);
}

// Whether this rank counts a parameter in the gradient norm (HeldParameter::counts_here).
std::function<bool(const ParameterSpec&)> counts_in_norm(const std::vector<HeldParameter>& share, int pipeline_rank,
                                                         int tp_rank) {
  auto counted = std::make_shared<std::unordered_set<std::string>>();
  for (const HeldParameter& held : share) {
    if (held.counts_here(pipeline_rank, tp_rank)) counted->insert(held.spec.name);
  }
  return [counted](const ParameterSpec& spec) { return counted->contains(spec.name); };
}

}  // namespace

Trainer::Trainer(const Config& config)
    : Trainer(config, std::make_unique<SingleRankCommunicator>(), nullptr,
              single_rank_training_device(config.runtime.device, launch_info().local_rank)) {}

Trainer::Trainer(const Config& config, Communicator& world, Device device)
    : Trainer(config, nullptr, &world, device) {}

Trainer::Trainer(const Config& config, Communicator& world)
    : Trainer(config, nullptr, &world, cpu_ranks_device(config.runtime.device)) {}

Trainer::Trainer(const Config& config, std::unique_ptr<Communicator> own_world, Communicator* world, Device device)
    : config_(plan_that_fits(config, device)),  // NOTE: first, before anything is allocated
      own_world_(std::move(own_world)),
      world_(world != nullptr ? *world : *own_world_),
      grid_(grid_shape(config.parallel)),
      groups_(make_parallel_groups(world_, grid_)),
      share_(rank_share(config.model, config.parallel, rank_coordinates(grid_, world_.rank()))),
      expert_exchange_(grid_.ep > 1 ? std::make_unique<ExpertExchange>(*groups_.ep, config.model.moe.routed_experts)
                                    : nullptr),
      device_(device),
      store_(make_store(config, share_, groups_, device_)),
      pipeline_(std::make_unique<TrainingPipeline>(config, store_, share_, *groups_.pp, expert_exchange_.get(),
                                                   TensorParallel(groups_.tp.get(), config.parallel.sequence_parallel,
                                                                  &tp_profiler_))),
      optimizer_(store_, config.optimizer, *groups_.dp, *groups_.expert_dp,
                 {.bucket_of = [](const ParameterSpec& spec) { return gradient_bucket(spec.name); },
                  .reads_fp32_value = reads_fp32_value,
                  .whole_values_every_step = config.ema.enabled,
                  .gather_under_forward = config.parallel.overlap_param_gather,
                  .update_under_forward = true,
                  .pipeline = groups_.model_parallel.get(),
                  .counts_in_norm = counts_in_norm(share_, groups_.pp->rank(), groups_.tp->rank())}),
      data_(open_training_data(config)),
      loader_(data_.train, loader_options(config, *groups_.dp)),
      loss_sums_(Shape{config.parallel.micro_batches.value(), loss_slots(config.model.mtp_depth)}, DType::f32,
                 device_),
      guard_(config.train.max_skipped_steps, optimizer_.master_values()),
      flops_per_token_(training_flops_per_token(config.model, config.train.seq_len)) {
  if (config.ema.enabled) {
    OwnedTensor initial(Shape{store_.numel()}, DType::f32);  // NOTE: the sharded masters are staged until the step
    store_.read_values(initial);
    ema_ = std::make_unique<ParameterEma>(initial, config.ema.decay);
  }
  // NOTE: the AdamW steps of the partitions held whole (and with parallel.overlap_param_gather the experts'
  // all-gathers) of one step run under the next forward, each layer waiting for its own, and the last
  // micro-batch's backward starts reducing each gradient bucket as it finishes it (zero1.h); a pipeline of several
  // ranks waits for all the updates before it starts (run_micro_batches) and reduces after its schedule.
  if (config.parallel.sequence_parallel) {
    replicated_grads_ = std::make_unique<ReplicatedGradientSum>(
        TensorParallel(groups_.tp.get(), true, &tp_profiler_), sequence_parallel_summed_gradients(share_, store_));
  }
  if (grid_.pp == 1) {
    pipeline_->overlap_with_optimizer([this](int bucket) { optimizer_.parameters_needed(bucket); },
                                      [this](int bucket) {
                                        if (replicated_grads_) replicated_grads_->bucket_final(bucket);
                                        optimizer_.gradients_final(bucket);
                                      });
  }
  if (config.precision.mode == PrecisionMode::fp16) loss_scaler_.emplace(config.precision.loss_scale);
}

Trainer::~Trainer() = default;

TrainEnd Trainer::train() {
  // NOTE: opened here, not by resume(), so that --eval-only of an earlier checkpoint leaves the run's records.
  if (is_rank0()) metrics_.emplace(config_.logging.run_dir, step_, config_.logging.tensorboard);
  log_startup();
  step_clock_.restart();
  while (step_ < config_.train.steps) {
    train_step();
    int stop_signal = guard_.agree(world_, step_);
    bool last = step_ == config_.train.steps;
    bool evaluate = config_.train.eval_interval > 0 && (step_ % config_.train.eval_interval == 0 || last);
    if (evaluate && stop_signal == 0) run_evaluation();
    bool due = last || stop_signal != 0 ||
               (config_.checkpoint.interval > 0 && step_ % config_.checkpoint.interval == 0);
    if (config_.checkpoint.save && due) save_checkpoint();
    if (stop_signal != 0) {
      spdlog::warn("stopped by {} after step {} of {}: {}", signal_name(stop_signal), step_, config_.train.steps,
                   config_.checkpoint.save ? "its checkpoint is saved; the run resumes from it"
                                           : "checkpoint.save is false: nothing saved");
      return TrainEnd::stopped;
    }
    if (evaluate || (config_.checkpoint.save && due)) step_clock_.restart();
  }
  optimizer_.gather_master_values();  // the run ends with every rank's fp32 values whole
  spdlog::info("training done at step {}: peak memory {:.3f} GiB on {}", step_, peak_memory_gib(device_),
               to_string(device_));
  return TrainEnd::finished;
}

void Trainer::train_step() {
  int64_t micro_batches = config_.parallel.micro_batches.value();
  mark_phase(profiler_.get(), "step.zero_grads");
  record_memory_point(profiler_.get(), "step_start", "step");
  store_.zero_grads();
  zero_fill(expert_load());
  double loss_scale = loss_scaler_ ? loss_scaler_->scale() : 1.0;
  std::vector<CountedTokens> counted =
      run_micro_batches(static_cast<float>(loss_scale) / static_cast<float>(micro_batches));
  optimizer_.join_step();  // NOTE: free here: the forward has waited for every bucket's update already
  record_memory_point(profiler_.get(), "after_backward", "step");
  mark_phase(profiler_.get(), "step.expert_load_all_reduce");
  reduce_expert_load();

  ++step_;
  // NOTE: the norm, the clipping and the skip of a non-finite step are decided on the device (zero1.h): the host
  // queues the whole update without waiting, and reads the step's results once, at its end.
  mark_phase(profiler_.get(), "step.gradient_reduce_and_norm");
  if (replicated_grads_) replicated_grads_->finish_step();  // sequence parallelism: each tp rank's tokens' part
  optimizer_.reduce_gradients({.max_norm = config_.optimizer.grad_clip, .loss_scale = loss_scale});
  // NOTE: the routing biases move before the update is queued: the update may run beside the compute stream, whose
  // small kernels would then wait for multiprocessors that the update's blocks hold.
  mark_phase(profiler_.get(), "step.router_bias_update");
  update_router_biases(config_.model, store_, expert_load(), static_cast<float>(config_.model.moe.bias_update_speed),
                       optimizer_.update_scale());
  double lr = learning_rate(config_.optimizer, config_.train.steps, step_);
  optimizer_.step(static_cast<float>(lr), step_);

  mark_phase(profiler_.get(), "step.read_back");
  StepLosses losses = read_step_losses(loss_sums_, counted, config_.model.mtp_loss_weight, *groups_.dp);
  // NOTE: the norm is the finite check: non-finite on every rank exactly when some rank's gradients were.
  double grad_norm = optimizer_.grad_norm();
  bool skipped = !std::isfinite(grad_norm);
  if (loss_scaler_) loss_scaler_->update(!skipped);
  guard_.count_step(step_, skipped);
  if (skipped) {
    guard_.queue_value_check();  // NOTE: only here: weights that are not finite make every later step skip
    spdlog::warn("step {}: the gradients are not finite (norm {}); the update is skipped", step_, grad_norm);
    if (loss_scaler_) spdlog::warn("step {}: loss scale {} -> {}", step_, loss_scale, loss_scaler_->scale());
  }
  mark_phase(profiler_.get(), "step.ema");
  if (ema_ && !skipped) {
    optimizer_.join_step();
    ema_->submit([this](const Tensor& staging) { store_.read_values(staging); });  // whole after the step's gather
  }

  mark_phase(profiler_.get(), "step.metrics_and_logging");
  double step_ms = step_clock_.lap_ms();
  step_time_.add(step_ms);
  int64_t step_tokens = config_.train.global_batch_size * config_.train.seq_len;
  StepRecord record{.step = step_,
                    .tokens = step_ * step_tokens,
                    .loss = losses.objective,
                    .lm_loss = losses.lm,
                    .mtp_loss = losses.mtp,
                    .balance_loss = losses.balance,
                    .lr = lr,
                    .grad_norm = grad_norm,
                    .loss_scale = loss_scale,
                    .skipped = skipped,
                    .step_ms = step_ms,
                    .tokens_per_s = static_cast<double>(step_tokens) / (step_ms / 1000.0),
                    .mfu = 0,
                    .mem_gib = peak_memory_gib(device_)};
  // NOTE: logging.peak_tflops is a GPU's: on the CPU the MFU is not known (NaN: null in metrics.jsonl, n/a logged).
  record.mfu = std::numeric_limits<double>::quiet_NaN();
  if (device_.is_cuda()) {
    record.mfu = mfu(record.tokens_per_s, flops_per_token_, config_.logging.peak_tflops, world_.size());
  }
  if (metrics_) metrics_->write(record);

  bool log_now = step_ % config_.logging.interval == 0 || step_ == 1 || step_ == config_.train.steps;
  if (!log_now) return;
  ExpertLoadRecord load_record{.step = step_, .layers = {}};
  OwnedTensor load = host_copy(expert_load());  // [moe blocks, E]
  std::vector<int64_t> blocks = moe_block_indices(config_.model);
  for (size_t row = 0; row < blocks.size(); ++row) {
    Tensor layer_load = load.tensor().slice(static_cast<int64_t>(row), static_cast<int64_t>(row) + 1)
                            .reshape(Shape{config_.model.moe.routed_experts});
    load_record.layers.push_back({blocks[row], expert_load_stats(layer_load)});
  }
  if (metrics_) metrics_->write(load_record);
  spdlog::info(format_progress({.step = step_,
                                .total_steps = config_.train.steps,
                                .loss = record.loss,
                                .lr = lr,
                                .grad_norm = grad_norm,
                                .tokens_per_s = record.tokens_per_s,
                                .mfu = record.mfu,
                                .step_ms = step_ms,
                                .mem_gib = record.mem_gib,
                                .eta_s = step_time_.eta_s(config_.train.steps - step_)}));
}

std::vector<CountedTokens> Trainer::run_micro_batches(float grad_scale) {
  int64_t micro_batches = config_.parallel.micro_batches.value();
  mark_phase(profiler_.get(), "step.data_loading");
  std::vector<OwnedTensor> windows;  // [B, S + 1] i32 on the host, one per micro-batch
  for (int64_t micro_batch = 0; micro_batch < micro_batches; ++micro_batch) windows.push_back(loader_.next());
  std::vector<Tensor> tokens(windows.begin(), windows.end());
  if (grid_.pp > 1) {
    mark_phase(profiler_.get(), "step.pipeline_forward_backward");  // NOTE: the stages mark no phases of their own
    optimizer_.join_step();
  }
  return pipeline_->train_step(tokens, grad_scale, loss_sums_);
}

nlohmann::ordered_json Trainer::profile(int64_t warmup_steps, int64_t profiled_steps) {
  HAI_CHECK(warmup_steps >= 0 && profiled_steps > 0, "profile: {} warm-up and {} profiled steps", warmup_steps,
            profiled_steps);
  step_clock_.restart();
  for (int64_t step = 0; step < warmup_steps; ++step) train_step();
  profiler_ = std::make_unique<StepProfiler>(device_);
  optimizer_.set_profiler(profiler_.get());
  pipeline_->set_profiler(profiler_.get());
  if (grid_.pp == 1) tp_profiler_ = profiler_.get();  // NOTE: a pipeline's stages mark no phases (run_micro_batches)
  for (int64_t step = 0; step < profiled_steps; ++step) {
    profiler_->begin_step();
    train_step();
    profiler_->end_step();
  }
  nlohmann::ordered_json report = profiler_->report();
  optimizer_.set_profiler(nullptr);
  pipeline_->set_profiler(nullptr);
  tp_profiler_ = nullptr;
  if (grid_.pp > 1) report["pipeline"] = pipeline_->bubble_report(report);
  profiler_.reset();
  int64_t step_tokens = config_.train.global_batch_size * config_.train.seq_len;
  report["warmup_steps"] = warmup_steps;
  report["tokens_per_step"] = step_tokens;
  report["tokens_per_s"] = static_cast<double>(step_tokens) / (report["step_ms"].get<double>() / 1000.0);
  return report;
}

void Trainer::reduce_expert_load() {
  // NOTE: the whole global batch's load moves the routing biases, so every rank moves them alike.
  groups_.dp->all_reduce(expert_load(), ReduceOp::sum);
  // NOTE: under sequence parallelism each tp rank routed its own tokens.
  if (config_.parallel.sequence_parallel) groups_.tp->all_reduce(expert_load(), ReduceOp::sum);
}

EvalResult Trainer::evaluate(int64_t max_windows) {
  optimizer_.join_step();  // the forward waits for each layer's update, but the EMA swap copies every value first
  if (!config_.ema.eval) return evaluate_current(max_windows);
  // Evaluate with the EMA weights swapped in, then put the trained weights back.
  // NOTE: the sharded fp32 masters stay in ZeRO-1's shards; their trained values are staged back from there.
  OwnedTensor trained(store_.values().shape(), DType::f32, device_);
  copy_tensor(trained, store_.values());
  store_.write_values(ema_->values());
  store_.refresh_compute_copy();
  EvalResult result = evaluate_current(max_windows);
  copy_tensor(store_.values(), trained);
  optimizer_.gather_master_values();
  store_.refresh_compute_copy();
  return result;
}

EvalResult Trainer::evaluate_current(int64_t max_windows) {
  HAI_CHECK(data_.eval != nullptr, "no evaluation data: set data.valid_fraction or data.eval_path");
  // NOTE: a whole source is a dataset file (the synthetic source is endless: max_windows bounds it, main.cc).
  uint64_t available = data_.eval->window_count();
  HAI_CHECK(max_windows >= 0 || available <= kMaxWholeEvalWindows,
            "the evaluation source has {} windows, more than the {} scored whole", available, kMaxWholeEvalWindows);
  auto windows = static_cast<int64_t>(available);
  if (max_windows >= 0) windows = std::min(windows, max_windows);
  HAI_CHECK(windows > 0, "no evaluation window to score (train.eval_batches x train.micro_batch_size = {})",
            max_windows);
  int64_t batch = config_.train.micro_batch_size, seq_len = config_.train.seq_len;
  TokenLoss lm, mtp;
  for (int64_t first = 0; first < windows; first += batch) {
    int64_t rows = std::min(batch, windows - first);
    OwnedTensor tokens(Shape{rows, seq_len + 1}, DType::i32);  // [rows, S + 1]
    for (int64_t row = 0; row < rows; ++row) {
      std::span<int32_t> window(tokens.data<int32_t>() + row * (seq_len + 1), static_cast<size_t>(seq_len + 1));
      data_.eval->read_window(static_cast<uint64_t>(first + row), window);
    }
    MicroBatchLosses losses = pipeline_->evaluate(tokens);
    lm.sum += losses.lm.sum;
    lm.tokens += losses.lm.tokens;
    for (const TokenLoss& depth : losses.mtp) {
      mtp.sum += depth.sum;
      mtp.tokens += depth.tokens;
    }
  }
  return {.lm_loss = lm.mean(), .mtp_loss = mtp.mean(), .tokens = lm.tokens, .windows = windows};
}

void Trainer::run_evaluation() {
  EvalResult result = evaluate(config_.train.eval_batches * config_.train.micro_batch_size);
  int64_t step_tokens = config_.train.global_batch_size * config_.train.seq_len;
  if (metrics_) {
    metrics_->write(EvalRecord{.step = step_, .tokens = step_ * step_tokens, .eval_loss = result.lm_loss});
  }
  spdlog::info("step {}: eval loss {:.4f} (MTP {:.4f}) over {} windows", step_, result.lm_loss, result.mtp_loss,
               result.windows);
}

void Trainer::log_startup() const {
  ParameterCounts counts = count_parameters(config_.model);
  spdlog::info("hai-train: {} rank(s) (dp {}, pp {}, tp {}, ep {}), device {}, precision {}", world_.size(),
               grid_.dp, grid_.pp, grid_.tp, config_.parallel.ep, to_string(device_),
               to_string(config_.precision.mode));
  spdlog::info("parameters: {:.3f}M total, {:.3f}M activated per token, {:.3f}M in MTP modules",
               counts.total / 1e6, counts.activated / 1e6, counts.mtp / 1e6);
  spdlog::info("memory: fp32 values held whole {:.1f} MiB (+ compute copy; this rank's stages, routed experts 1/{}), "
               "optimizer {:.1f} MiB (ZeRO-1: the moments, and in mixed precision the fp32 master, of {} of this "
               "rank's {} trainable elements; dense 1/{}, experts 1/{})",
               store_.values().bytes() / 1048576.0, grid_.ep, optimizer_.state_bytes() / 1048576.0,
               optimizer_.owned_elements(), store_.grads().numel(), grid_.dp, grid_.expert_dp());
  if (grid_.pp > 1) {
    spdlog::info("pipeline: {} over pp {} ranks, {} micro-batches per step; each rank holds its stages' parameters",
                 to_string(config_.parallel.schedule), grid_.pp, config_.parallel.micro_batches.value());
    for (const std::string& line : stage_layout_lines(config_)) spdlog::info("{}", line);
  }
  spdlog::info("peak memory so far: {:.3f} GiB ({})", peak_memory_gib(device_),
               device_.is_cuda() ? "the GPU's caching pool: parameters, gradients, optimizer state" : "host RSS");
  if (device_.is_cuda()) {
    spdlog::info("MFU = tokens/s x {:.4g} FLOP/token / ({} TFLOP/s x {} device(s)); FLOP/token = 6 x activated "
                 "matmul parameters (head included, embedding not) + 3 x layers x heads x seq_len x (d_qk + d_v)",
                 flops_per_token_, config_.logging.peak_tflops, world_.size());
  } else {
    spdlog::info("MFU: n/a on the CPU (logging.peak_tflops is a GPU's peak); {:.4g} FLOP/token", flops_per_token_);
  }
  spdlog::info("training steps {}..{} of {}, {} sequences of {} tokens per step ({} micro-batches of {})",
               step_ + 1, config_.train.steps, config_.train.steps, config_.train.global_batch_size,
               config_.train.seq_len, config_.parallel.micro_batches.value(), config_.train.micro_batch_size);
}

}  // namespace hai
