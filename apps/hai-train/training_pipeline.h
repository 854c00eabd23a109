#pragma once
// Pipeline parallelism in the trainer (parallel.pp > 1): this rank's stages of the model (model/pipeline_model.h)
// run the rank's program of the configured schedule (parallel.schedule, parallel/pipeline/) through the pipeline
// engine over the pipeline group, then the step's loss sums, gradients and expert load are summed over that group,
// so every pipeline rank ends the step as one rank running the whole model would.
//
// NOTE: every pipeline rank keeps the whole parameter store (and ZeRO-1 its share of the whole model's moments
// over the DP group), so parameters, gradients and moments cost as much memory as without pipelining, and the
// gradient all-reduce over the pipeline group moves the whole store. Sharding the store by stage is not done.

#include <vector>

#include <nlohmann/json.hpp>

#include "framework/comm/communicator.h"
#include "framework/config/config.h"
#include "framework/metrics/step_profiler.h"
#include "framework/params/parameter_store.h"
#include "model/pipeline_model.h"
#include "parallel/expert_exchange.h"
#include "parallel/pipeline/engine.h"
#include "parallel/pipeline/schedule.h"

namespace hai {

class TrainingPipeline {
 public:
  // pipeline: the pipeline group (topology.h), parallel.pp ranks ranked by pipeline rank; it and the store must
  // outlive this. experts: as DeepseekV3Model (null at ep = 1).
  TrainingPipeline(const Config& config, ParameterStore& store, Communicator& pipeline, ExpertExchange* experts);

  // Forward and backward of a step's micro-batches, tokens: one [B, S + 1] i32 host tensor per micro-batch (the
  // same on every pipeline rank). The store's gradients must be started (ParameterStore::zero_grads) and
  // expert_load ([moe blocks, E] i32, rows as DeepseekV3Model::expert_load) be zero; afterwards, on every pipeline
  // rank, they hold the gradients of grad_scale x each micro-batch's objective and the step's routed counts, and
  // loss_sums ([micro-batches, loss_slots(D)] fp32) each micro-batch's loss sums. Returns each micro-batch's
  // counted targets.
  std::vector<CountedTokens> train_step(const std::vector<Tensor>& tokens, float grad_scale, const Tensor& loss_sums,
                                        const Tensor& expert_load);

  // Profiling (null: off): the engine marks each instruction's phase (engine.h), and the step's all-reduces over
  // the pipeline group are "step.pipeline_all_reduce".
  void set_profiler(StepProfiler* profiler);
  // The bubble from a StepProfiler report of steps profiled with set_profiler, this rank's and every rank's:
  // measured (the time of the rank's pipeline.* phases less their compute: waits and transfers) next to the
  // simulator's (simulator.h) for the same schedule with each rank's measured mean F, B and W of one instruction
  // and free transfers. Collective over the pipeline group.
  //   {"pipeline_rank", "costs_ms": {"F", "B", "W"}, "measured": {"pipeline_ms", "compute_ms", "bubble_ms",
  //    "bubble_share"}, "simulated": {the same}, "schedule", "ranks", "micro_batches",
  //    "every_rank": [{"pipeline_rank", "costs_ms", "measured", "simulated"} for each pipeline rank]}
  nlohmann::ordered_json bubble_report(const nlohmann::ordered_json& profile) const;

 private:
  ParameterStore& store_;
  Communicator& pipeline_;
  Schedule schedule_;
  PipelineModel model_;  // this rank's stages
  PipelineEngine engine_;
  StepProfiler* profiler_ = nullptr;
};

}  // namespace hai
