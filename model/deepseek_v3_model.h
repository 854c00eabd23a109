#pragma once
// The whole DeepSeek-V3 model on one rank (embedding, decoder layers, final norm and output head, MTP modules), for
// tests and tools: a facade over the one code path every run takes, the stage list driven by the pipeline engine
// (pipeline_model.h, parallel/pipeline/engine.h). The whole model is one stage, first and last, and a micro-batch
// is one step of the one-rank schedule: F, B (each layer's W right after its B) and W. Nothing here walks layers.
// The model runs on the store's device. The micro-batch's tokens come from the host; everything derived from them
// (inputs, targets, positions, MTP ids) is built there and copied to the device once. Inside the call nothing is
// read back: the losses are summed on the device into a small tensor the caller reads when it wants to (the
// trainer: once per step). The objective L of a micro-batch: micro_batch_losses.h.

#include <memory>
#include <vector>

#include "framework/comm/single_rank_communicator.h"
#include "model/gradient_buckets.h"
#include "model/micro_batch_inputs.h"
#include "model/micro_batch_losses.h"
#include "model/pipeline_model.h"
#include "parallel/pipeline/engine.h"

namespace hai {

class DeepseekV3Model {
 public:
  // experts: expert parallelism's exchange (the store then holds only this rank's routed experts); null: all
  // routed experts are local.
  // tp: tensor parallelism (the store then holds this tp rank's shards: rank_share.h); default one rank.
  DeepseekV3Model(const ModelConfig& model, const ParameterStore& store, ExpertExchange* experts = nullptr,
                  TensorParallel tp = {});
  ~DeepseekV3Model();
  DeepseekV3Model(const DeepseekV3Model&) = delete;
  DeepseekV3Model& operator=(const DeepseekV3Model&) = delete;

  Device device() const { return store_.values().device(); }

  // Forward + backward of one micro-batch: tokens [B, S + 1] i32 on the host (inputs tokens[:, :S], targets
  // tokens[:, 1:]). The gradients of grad_scale * L accumulate into the store; the routed-token counts into
  // expert_load(). loss_sums: [loss_slots(mtp_depth)] fp32 on the model's device, overwritten with this
  // micro-batch's sums (queued: nothing waits for them). on_final, when given, is told each gradient bucket
  // (gradient_buckets.h) as the backward finishes it, kGradientsFinalAtEnd excepted.
  CountedTokens train_micro_batch(const Tensor& tokens, float grad_scale, const Tensor& loss_sums,
                                  const GradientsFinal& on_final = nullptr);
  // The same, reading the losses back at once (tests).
  MicroBatchLosses train_micro_batch(const Tensor& tokens, float grad_scale);
  // Forward only, the losses read back; expert_load() is left alone.
  MicroBatchLosses evaluate(const Tensor& tokens);

  // [moe blocks, E] i32 on the model's device: tokens routed to each expert since reset_expert_load(); rows
  // follow moe_layer_indices().
  Tensor expert_load() const { return expert_load_.tensor(); }
  void reset_expert_load();
  // Auxiliary-loss-free balancing: every MoE layer's routing bias += gamma * sign(mean load - load), unless
  // update_scale (the optimizer's [1] fp32 factor on the model's device, framework/device/grad_clip.h) is NaN.
  void update_router_biases(float gamma, const Tensor& update_scale = {});
  // The layer index (as in the HF names) of each row of expert_load() (moe_block_indices, router_biases.h).
  const std::vector<int64_t>& moe_layer_indices() const { return moe_layer_indices_; }

  // The phases and memory points of train_micro_batch (PipelineModel::set_profiler); null turns it off.
  void set_profiler(StepProfiler* profiler) { stages_.set_profiler(profiler); }
  // What every decoder layer (MTP blocks included) recomputes in its backward (DecoderLayer::set_recompute).
  void set_recompute(RecomputeMode mode) { stages_.set_recompute(mode); }
  // Every forward pass (training and evaluation) tells `needed` each gradient bucket before it reads its weights
  // (PipelineStage::set_parameters_needed). Null: nothing is told.
  void set_parameters_needed(const ParametersNeeded& needed) { stages_.set_parameters_needed(needed); }

 private:
  // Host copy of loss sums: [loss_slots] fp32 on the model's device -> host values.
  MicroBatchLosses read_back(const Tensor& loss_sums, const CountedTokens& counted) const;

  ModelConfig config_;
  const ParameterStore& store_;
  PipelineModel stages_;  // the one stage: the whole model
  SingleRankCommunicator rank_;
  PipelineEngine engine_;             // on the one-rank pipeline
  std::vector<Instruction> program_;  // the one-rank schedule of one micro-batch: F, B, W
  std::vector<int64_t> moe_layer_indices_;
  OwnedTensor expert_load_;
};

}  // namespace hai
