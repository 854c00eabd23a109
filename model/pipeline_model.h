#pragma once
// The stages of the DeepSeek-V3 model that one pipeline rank holds, driven by the pipeline engine
// (parallel/pipeline/engine.h) for the micro-batches of a step. Every stage reads its parameters from the rank's
// store; with DualPipe(V) a rank holds two stages; without pipeline parallelism the rank holds the one stage that
// is the whole model, run by the one-rank schedule (F, B, W of each micro-batch in turn: DeepseekV3Model, the
// trainer at pp 1). Every rank builds every micro-batch's token rows from the same
// windows (the loader gives each rank of a pipeline the same ones), so only hidden states and their gradients
// travel between ranks. T = tokens of a micro-batch, H = hidden size.

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "model/gradient_buckets.h"
#include "model/micro_batch_losses.h"
#include "model/model_rope_table.h"
#include "model/pipeline_stage.h"
#include "parallel/pipeline/engine.h"

namespace hai {

class PipelineModel final : public PipelineStages {
 public:
  // stages: every stage's layers (pipeline_stages); held_stages: the indices of those this rank runs (placement.h).
  PipelineModel(const ModelConfig& model, const ParameterStore& store, const std::vector<StageLayers>& stages,
                const std::vector<int>& held_stages, ExpertExchange* experts = nullptr, TensorParallel tp = {});
  ~PipelineModel() override;
  PipelineModel(const PipelineModel&) = delete;
  PipelineModel& operator=(const PipelineModel&) = delete;

  // Sets up a step: tokens: one [B, S + 1] i32 host tensor per micro-batch; loss_sums: [micro-batches,
  // loss_slots(D)] fp32 on the store's device, zeroed here, then each row gets its micro-batch's sums of this
  // rank's stages; expert_load: [moe blocks, E] i32 += the routed counts of this rank's MoE layers. The gradients
  // of grad_scale x each micro-batch's objective accumulate into the store.
  void start_step(const std::vector<Tensor>& tokens, float grad_scale, const Tensor& loss_sums,
                  const Tensor& expert_load);
  // The counted targets of each micro-batch of the step.
  std::vector<CountedTokens> counted() const;
  // Evaluation: the forward of held stage `stage` for `batch`, nothing kept: input and output as forward's;
  // loss_sums: [loss_slots(D)] fp32 += the stage's losses. No gradient, no routed counts.
  void evaluate(int stage, const MicroBatchInputs& batch, const Tensor& input, const Tensor& output,
                const Tensor& loss_sums) const;

  Shape boundary_shape() const override { return boundary_shape_; }
  // [T_r, H] the hidden states between stages for a micro-batch of `tokens` tokens (PipelineStage::hidden_shape).
  Shape boundary_shape(int64_t tokens) const;
  Device device() const override { return store_.values().device(); }
  void forward(int stage, int microbatch, const Tensor& input, const Tensor& output) override;
  // NOTE: on the whole-model stage B runs each layer's W right after its B (PipelineStage::backward: nothing waits
  // for its input gradient, and data parallelism reduces each finished bucket under the rest of the backward); its
  // W then only releases what is left. The values are those of B then W.
  void backward_input(int stage, int microbatch, const Tensor& d_output, const Tensor& d_input) override;
  void backward_weight(int stage, int microbatch) override;
  // What the stages' decoder layers recompute (DecoderLayer::set_recompute).
  void set_recompute(RecomputeMode mode);
  // The stages' phases and memory points (PipelineStage::set_profiler), and the upload of each micro-batch's token
  // rows ("forward.inputs_upload"); null turns it off.
  void set_profiler(StepProfiler* profiler);
  // Every forward tells `needed` each bucket before it reads its weights (PipelineStage::set_parameters_needed).
  void set_parameters_needed(const ParametersNeeded& needed);
  // The backward of the step's last micro-batch tells `on_final` each gradient bucket as it finishes it
  // (gradient_buckets.h); null: nothing is told. Only where that W is the last to add to each bucket of this rank
  // and nothing is summed over the pipeline afterwards: a one-stage pipeline.
  void set_gradients_final(GradientsFinal on_final) { on_final_ = std::move(on_final); }

 private:
  const PipelineStage& stage(int index) const;
  const MicroBatchInputs& batch(int microbatch) const;
  PipelineStage::Context& context(int stage, int microbatch);
  // on_final_ during the step's last micro-batch, else null.
  GradientsFinal gradients_final(int microbatch) const;

  ModelConfig config_;
  const ParameterStore& store_;
  ModelRopeTable rope_;
  std::map<int, std::unique_ptr<PipelineStage>> stages_;  // by stage index
  std::vector<MicroBatchInputs> batches_;                 // this step's, one per micro-batch
  std::map<std::pair<int, int>, PipelineStage::Context> contexts_;  // by (stage, micro-batch), from F to W
  Shape boundary_shape_;  // [T, H]
  float grad_scale_ = 1;
  Tensor loss_sums_;    // [micro-batches, loss slots]
  Tensor expert_load_;  // [moe blocks, E]
  StepProfiler* profiler_ = nullptr;
  GradientsFinal on_final_;
};

}  // namespace hai
