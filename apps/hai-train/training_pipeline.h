#pragma once
// The trainer's one model driver: this rank's stages of the model (model/pipeline_model.h) run the rank's program
// of the configured schedule (parallel.schedule, parallel/pipeline/) through the pipeline engine over the pipeline
// group. Without pipeline parallelism (parallel.pp 1) the rank holds the one stage that is the whole model, run
// by the one-rank schedule (F, B and W of each micro-batch in turn, whatever parallel.schedule says), with no
// message and nothing summed over the pipeline: training, evaluation and profiling take the same path at every
// pp. The rank's store holds only its stages' parameters (model/rank_share.h); after the schedule the gradients of
// the parameters held by several pipeline ranks are summed over exactly those ranks (parallel/pipeline_replicas.h),
// and the step's loss sums and expert load (small) over the whole group, so every rank has every MoE layer's load
// for the metrics and the routing biases of its own layers.

#include <vector>

#include <nlohmann/json.hpp>

#include "framework/comm/communicator.h"
#include "framework/config/config.h"
#include "framework/metrics/step_profiler.h"
#include "framework/params/parameter_store.h"
#include "model/pipeline_model.h"
#include "model/rank_share.h"
#include "parallel/pipeline_replicas.h"
#include "parallel/expert_exchange.h"
#include "parallel/pipeline/engine.h"
#include "parallel/pipeline/schedule.h"

namespace hai {

class TrainingPipeline {
 public:
  // pipeline: the pipeline group (topology.h), parallel.pp ranks (one at pp 1) ranked by pipeline rank; it and
  // the store must outlive this. share: what this rank holds (rank_share.h), the store's parameters. experts, tp: as
  // DeepseekV3Model (null at ep = 1, one rank at tp = 1). Collective over the pipeline group.
  TrainingPipeline(const Config& config, ParameterStore& store, const std::vector<HeldParameter>& share,
                   Communicator& pipeline, ExpertExchange* experts, TensorParallel tp = {});

  // Forward and backward of a step's micro-batches, tokens: one [B, S + 1] i32 host tensor per micro-batch (the
  // same on every pipeline rank). The store's gradients must be started (ParameterStore::zero_grads) and
  // expert_load() be zero; afterwards the store holds the gradients of grad_scale x each micro-batch's objective
  // (of this rank's parameters, replicas summed), and on every pipeline rank expert_load() the step's routed counts
  // of every MoE layer and loss_sums ([micro-batches, loss_slots(D)] fp32) each micro-batch's loss sums. Returns
  // each micro-batch's counted targets.
  std::vector<CountedTokens> train_step(const std::vector<Tensor>& tokens, float grad_scale, const Tensor& loss_sums);
  // [moe blocks, E] i32 on the store's device, rows as DeepseekV3Model::expert_load: the routed counts.
  Tensor expert_load() const { return expert_load_.tensor(); }
  // Forward only of one micro-batch (tokens [B, S + 1] i32 on the host, the same on every pipeline rank) through
  // the stages in order, each run by the lowest pipeline rank holding it; the losses on every pipeline rank.
  // Collective over the pipeline group.
  MicroBatchLosses evaluate(const Tensor& tokens);

  // Profiling (null: off): on one rank the stage marks its phases (PipelineModel::set_profiler: forward.embedding,
  // forward.attention, ...); on more the engine marks each instruction's phase (engine.h), and the step's
  // all-reduces over the pipeline group are "step.pipeline_all_reduce".
  void set_profiler(StepProfiler* profiler);
  // ZeRO-1's overlap with the stages (parallel/zero1.h) on a one-rank pipeline (throws on more): every forward
  // tells `needed` each bucket before it reads its weights, and the step's last backward tells `on_final` each
  // bucket as it finishes it (gradient_buckets.h).
  void overlap_with_optimizer(const ParametersNeeded& needed, const GradientsFinal& on_final);
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
  ModelConfig config_;
  Schedule schedule_;
  PipelineModel model_;  // this rank's stages
  PipelineEngine engine_;
  PipelineReplicaGradients replicas_;
  OwnedTensor expert_load_;  // [moe blocks, E] i32
  StepProfiler* profiler_ = nullptr;
};

}  // namespace hai
