#pragma once
// Trainer: training of the DeepSeek-V3 model on the CPU backend or on GPUs (runtime.device, training_world.h;
// parameters, optimizer state and activations live there, each micro-batch is uploaded once and the losses are read
// back once per step), on one rank or data-parallel over the ranks of a world communicator (ZeRO-1,
// parallel/zero1.h), with the routed experts split over parallel.ep ranks (expert
// parallelism, parallel/expert_exchange.h: each rank's store holds only its experts; expert gradients reduce
// over the expert-DP group), and the layers split into parallel.pp pipeline stages run by parallel.schedule
// (training_pipeline.h; each rank's store holds only its share, model/rank_share.h). A step accumulates the
// gradients of parallel.micro_batches micro-batches (each rank reads its rows of every global micro-batch),
// averages them over the DP group, clips them by global norm, moves the routing biases with the expert load summed
// over the DP group (auxiliary-loss-free balancing), applies AdamW with the scheduled learning rate and feeds the
// EMA. Every rank holding a parameter ends a step with the same value of it. Logging and metrics (global means)
// come from rank 0; evaluation, checkpoints (every rank writes its shard, rank 0 commits) follow the config
// (docs/architecture.md "Outputs", "Checkpoints").

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/checkpoint/checkpoint_manifest.h"
#include "framework/config/config.h"
#include "framework/comm/communicator.h"
#include "framework/data/data_loader.h"
#include "framework/metrics/run_metrics.h"
#include "framework/metrics/progress.h"
#include "framework/metrics/step_profiler.h"
#include "framework/optim/ema.h"
#include "framework/optim/loss_scaler.h"
#include "framework/params/parameter_store.h"
#include "apps/hai-train/step_guard.h"
#include "apps/hai-train/training_data.h"
#include "apps/hai-train/training_pipeline.h"
#include "model/rank_share.h"
#include "parallel/expert_exchange.h"
#include "parallel/sequence_parallel.h"
#include "parallel/topology.h"
#include "parallel/zero1.h"

namespace hai {

// Why train() returned: train.steps reached, or a stop signal (the step's checkpoint saved, step_guard.h).
enum class TrainEnd { finished, stopped };

struct EvalResult {
  double lm_loss = 0;   // mean over counted tokens, main head
  double mtp_loss = 0;  // mean over the MTP depths of their token means
  int64_t tokens = 0;
  int64_t windows = 0;
};

class Trainer {
 public:
  // One rank, without MPI: the config's layout must be a single rank.
  explicit Trainer(const Config& config);
  // The ranks of `world` (which must outlive the trainer), laid out per the config's parallel section, on
  // `device` (training_world.h: the CPU, or this rank's GPU with a world that moves device tensors).
  Trainer(const Config& config, Communicator& world, Device device);
  // The same on the CPU backend (runtime.device cpu or auto; cuda is an error): MPI ranks in one test process.
  Trainer(const Config& config, Communicator& world);
  ~Trainer();

  // Resumes per checkpoint.resume; returns the step it resumes after (0 for a fresh start). Under "auto" a
  // checkpoint that fails to load on any rank (a corrupt file) is warned about and the next older one is tried
  // (resume_candidates, resolve_checkpoint.h); it is an error when none loads. restore_data_position false (for
  // --eval-only) leaves the training data's position at its start.
  int64_t resume(bool restore_data_position = true);
  // The checkpoint resume() loaded (a step directory), if any.
  const std::optional<std::string>& resumed_from() const { return resumed_from_; }
  // Trains from the current step to train.steps, then saves the final checkpoint; or, when a stop signal came (see
  // watch), stops after the step every rank agrees on and saves its checkpoint. Throws hai::Error when the training
  // diverges (step_guard.h).
  TrainEnd train();
  // Stop signals train() polls at each step boundary (null: none); they must outlive the trainer or be unset.
  void watch(const StopSignals* signals) { guard_.watch(signals); }
  // The evaluation source's first `max_windows` windows in order (all of them, at most 2^31, when max_windows < 0),
  // with the EMA weights when ema.eval is set; `windows` of the result says how many were scored.
  EvalResult evaluate(int64_t max_windows);
  // Trains warmup_steps steps, then profiled_steps steps with a StepProfiler (framework/metrics/step_profiler.h):
  // its report (where a step's time and memory go) with warmup_steps, tokens_per_step and tokens_per_s added.
  // The steps are real training steps (the step counter moves); no metrics, evaluation or checkpoint.
  nlohmann::ordered_json profile(int64_t warmup_steps, int64_t profiled_steps);

  int64_t step() const { return step_; }
  const ParameterStore& parameters() const { return store_; }
  const Zero1Optimizer& optimizer() const { return optimizer_; }
  // The dynamic loss scale the next step uses (precision.mode fp16), 1 in the other modes.
  double loss_scale() const { return loss_scaler_ ? loss_scaler_->scale() : 1.0; }

 private:
  // world: the given communicator, or null for *own_world.
  Trainer(const Config& config, std::unique_ptr<Communicator> own_world, Communicator* world, Device device);
  void train_step();
  // Forward and backward of the step's micro-batches through this rank's stages (the whole model at pp 1): the
  // gradients of grad_scale x each objective into the store, the routed counts into the model's expert load, the
  // loss sums into loss_sums_. Returns each micro-batch's counted targets.
  std::vector<CountedTokens> run_micro_batches(float grad_scale);
  void reduce_expert_load();
  // [moe blocks, E] i32: the step's routed counts.
  Tensor expert_load() const { return pipeline_->expert_load(); }
  EvalResult evaluate_current(int64_t max_windows);
  void log_startup() const;
  void save_checkpoint();
  CheckpointState checkpoint_state() const;  // what rank 0 commits beside the tensors
  // Given every rank's problem in saving ("" where none), throws after removing the step's partial checkpoint
  // when any rank had one. Collective.
  void abandon_failed_save(const std::vector<std::string>& rank_problems);
  // Loads the checkpoint of step directory `path` (throws hai::Error when it does not load).
  void load_checkpoint(const std::string& path, bool restore_data_position);
  void run_evaluation();

  bool is_rank0() const { return world_.rank() == 0; }

  Config config_;
  std::unique_ptr<Communicator> own_world_;  // the single-rank world, when none is given
  Communicator& world_;
  GridShape grid_;
  ParallelGroups groups_;
  std::vector<HeldParameter> share_;  // what this rank holds (model/rank_share.h)
  std::unique_ptr<ExpertExchange> expert_exchange_;  // null at ep = 1
  Device device_;  // of the parameters, optimizer state and activations
  ParameterStore store_;
  StepProfiler* tp_profiler_ = nullptr;  // profiler_ while profile() runs at pp 1: the TP collectives' phase
  std::unique_ptr<TrainingPipeline> pipeline_;  // this rank's stages (at pp 1 the one stage: the whole model)
  Zero1Optimizer optimizer_;
  std::unique_ptr<ReplicatedGradientSum> replicated_grads_;  // sequence parallelism only
  std::unique_ptr<ParameterEma> ema_;
  std::optional<LossScaler> loss_scaler_;  // fp16 only
  TrainingData data_;
  DataLoader loader_;
  OwnedTensor loss_sums_;  // [micro-batches, loss slots] fp32 on device_: a step's losses, read once per step
  StepGuard guard_;  // the step boundary's checks: finite weights, skipped steps, stop signals
  std::optional<RunMetrics> metrics_;  // rank 0 only
  std::unique_ptr<StepProfiler> profiler_;  // only while profile() runs
  StepTimeAverage step_time_;
  StepClock step_clock_;  // step_ms: from the last step's measuring point (progress.h)
  double flops_per_token_;
  int64_t step_ = 0;
  std::optional<std::string> resumed_from_;
};

}  // namespace hai
