#pragma once
// One pipeline stage of the DeepSeek-V3 model: a contiguous run of decoder layers, with the embedding on the first
// stage and the final norm, output head and MTP modules on the last (docs/architecture.md "Pipeline"). The
// unpipelined model is the one stage that is first and last (the whole model): every run of the model, pipelined
// or not, training or evaluation, goes through stages (pipeline_model.h). Its forward (F), input gradient (B) and
// weight gradient (W) of a micro-batch run the model's ops in one order, so a pipelined step gives the one-stage
// step's values: bit for bit in fp32 for every parameter held by one stage, up to the order of the sums for the
// embedding (read by the first stage and by MTP on the last one).
// T = tokens of the micro-batch, H = hidden size.

#include <memory>
#include <optional>
#include <vector>

#include "framework/device/rope_table.h"
#include "framework/metrics/step_profiler.h"
#include "model/decoder_layer.h"
#include "model/gradient_buckets.h"
#include "model/micro_batch_inputs.h"
#include "model/mtp_module.h"
#include "model/output_head.h"
#include "model/vocab_parallel.h"

namespace hai {

struct StageLayers {
  int64_t first_layer = 0;
  int64_t layers = 1;
  bool first = false;  // holds the embedding
  bool last = false;   // holds the final norm, the output head and the MTP modules
};

// The model's decoder layers in `stages` contiguous stages: `layers_per_stage` (parallel.stage_layers) when it is
// not empty, else balanced by stage_partition.h's balanced_stage_layers, each layer costing 1 and the last stage's
// head and MTP modules 1 + mtp_depth more: the head about a layer, each MTP module a block and a head. Throws
// hai::Error unless 1 <= stages <= num_layers and explicit counts are `stages` counts >= 1 summing to num_layers.
std::vector<StageLayers> pipeline_stages(const ModelConfig& model, int stages,
                                         const std::vector<int64_t>& layers_per_stage);

class PipelineStage {
 public:
  // rope: the model's table (mla_rope_settings), owned by the caller; experts: as DecoderLayer.
  PipelineStage(const ModelConfig& model, const ParameterStore& store, const StageLayers& layers,
                const RopeTable& rope, ExpertExchange* experts = nullptr, TensorParallel tp = {});

  // What a micro-batch's F keeps for its B and W.
  struct Context {
    std::vector<DecoderLayer::Context> layers;
    OutputHead::Context head;             // last stage
    std::vector<MtpModule::Context> mtp;  // last stage, one per depth
    OwnedTensor d_embedded;               // [T, H] first stage: the embedding output's gradient, for W
  };

  // [T_r, H]: the shape of the hidden states between layers and stages for `tokens` tokens; T_r = T / tp under
  // sequence parallelism (each tp rank holds its rows, parallel/sequence_parallel.h), else T.
  Shape hidden_shape(int64_t tokens) const;

  // Whether the stage is the whole model (first and last): nothing waits for its input gradient.
  bool whole_model() const { return layers_.first && layers_.last; }

  // input: [T, H] the previous stage's output (not read on the first stage, which embeds batch.inputs); output:
  // [T, H] written with the last layer's output (not on the last stage). loss_sums: [loss_slots(D)] fp32 (layout in
  // micro_batch_losses.h) += this stage's balance losses, and on the last stage its main and MTP token losses.
  // expert_load: [moe blocks, E] i32 (rows as moe_block_indices, router_biases.h) += the routed counts of its MoE
  // layers. grad_scale: as backward_input's (the last stage's heads compute their gradients in forward,
  // output_head.h); std::nullopt: evaluation (no gradients, no routed counts: expert_load is not read). Each layer's
  // output is handed over to the next layer, which keeps it as its input (no copy); the first layer copies `input`.
  void forward(Context& ctx, const MicroBatchInputs& batch, const Tensor& input, const Tensor& output,
               const Tensor& loss_sums, const Tensor& expert_load, std::optional<float> grad_scale) const;
  // d_output: [T, H] the gradient of the output (not read on the last stage); d_input: [T, H] written (not on the
  // first stage). The gradients are those of grad_scale x the objective (micro_batch_losses.h).
  void backward_input(Context& ctx, const MicroBatchInputs& batch, const Tensor& d_output, const Tensor& d_input,
                      float grad_scale) const;
  // Accumulates the weight gradients into the store and releases the context. on_final, when given, is told each
  // gradient bucket (gradient_buckets.h) of the stage: the head's, the MTP modules', the layers', the embedding's.
  void backward_weight(Context& ctx, const MicroBatchInputs& batch, const GradientsFinal& on_final = nullptr) const;
  // B and W together, each decoder layer's W right after its B, last layer first, each bucket told to on_final as
  // soon as it is done (so that data parallelism reduces it under the rest of the backward); releases the context.
  // The same values as backward_input then backward_weight.
  void backward(Context& ctx, const MicroBatchInputs& batch, const Tensor& d_output, const Tensor& d_input,
                float grad_scale, const GradientsFinal& on_final = nullptr) const;

  // What every decoder layer of the stage (MTP blocks included) recomputes (DecoderLayer::set_recompute).
  void set_recompute(RecomputeMode mode);
  // Marks the phases of F, B and W (forward.embedding, each decoder layer's parts, forward.head_loss, forward.mtp,
  // backward_input.mtp, backward_input.head_loss, backward_weight.mtp, backward_weight.embedding) and the pool's
  // live bytes after each forward part (embedding, layer.<l>, head, mtp.<k>) in `profiler`
  // (framework/metrics/step_profiler.h); null turns it off.
  void set_profiler(StepProfiler* profiler);
  // Every forward (training and evaluation) tells `needed` each gradient bucket before it reads its weights: the
  // embedding's, each decoder layer's, the head's, each MTP module's. Null: nothing is told.
  void set_parameters_needed(ParametersNeeded needed) { parameters_needed_ = std::move(needed); }

 private:
  // Main layers, then MTP blocks: the row of expert_load of block `layer` (an MoE layer).
  Tensor expert_load_row(const Tensor& expert_load, int64_t layer) const;
  void forward_head(Context& ctx, const MicroBatchInputs& batch, const Tensor& hidden, const Tensor& loss_sums,
                    const Tensor& expert_load, std::optional<float> grad_scale) const;
  // The last stage's head and MTP modules' B: returns [T, H] the gradient of the last layer's output.
  OwnedTensor backward_head(Context& ctx, const MicroBatchInputs& batch, float grad_scale) const;
  // The decoder layers' B, last layer first, each followed by its W (its bucket told to on_final) when
  // with_weights. d_hidden: [T, H] the gradient of the last layer's output, owned (the head's, released after
  // the last layer's B) or empty to read d_output; d_input as backward_input's. Returns the first layer's input
  // gradient on the first stage (the embedding output's), else empty.
  OwnedTensor backward_layers(Context& ctx, OwnedTensor d_hidden, const Tensor& d_output, const Tensor& d_input,
                              float grad_scale, bool with_weights, const GradientsFinal& on_final) const;
  void backward_mtp_weights(Context& ctx, const GradientsFinal& on_final) const;
  void backward_embedding(Context& ctx, const MicroBatchInputs& batch, const GradientsFinal& on_final) const;
  // Tells parameters_needed_ the bucket, inside a phase of its own, "forward.update_wait": the compute stream's
  // wait there for the bucket's update left running beside the forward (parallel/zero1.h, update_under_forward).
  // The caller marks the phase that follows (a layer's forward marks its first itself).
  void need(int bucket) const {
    if (!parameters_needed_) return;
    mark_phase(profiler_, "forward.update_wait");
    parameters_needed_(bucket);
  }

  ModelConfig config_;
  StageLayers layers_;
  Device device_;                         // the store's
  std::optional<VocabParallelEmbedding> embedding_;  // first stage only
  std::vector<std::unique_ptr<DecoderLayer>> blocks_;
  std::unique_ptr<OutputHead> head_;             // last stage only
  std::vector<std::unique_ptr<MtpModule>> mtp_;  // last stage only
  StepProfiler* profiler_ = nullptr;
  ParametersNeeded parameters_needed_;
  TensorParallel tp_;
};

}  // namespace hai
