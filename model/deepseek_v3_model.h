#pragma once
// The whole DeepSeek-V3 model on one rank: embedding, decoder layers, final norm and output head, MTP modules.
// One call runs forward and backward of a micro-batch and accumulates the gradients into the ParameterStore.
// The model runs on the store's device. The micro-batch's tokens come from the host; everything derived from them
// (inputs, targets, positions, MTP ids) is built there and copied to the device once. Inside the call nothing is
// read back: the losses are summed on the device into a small tensor the caller reads when it wants to (the
// trainer: once per step).
//
// The objective of a micro-batch (docs/deepseek-v3.md):
//   L = L_main + mtp_loss_weight / D * sum_k L_k + sum over MoE layers of the sequence-wise balance loss
// L_main and L_k are means over the counted tokens of the micro-batch.

#include <memory>
#include <optional>
#include <vector>

#include "model/decoder_layer.h"
#include "model/gradient_buckets.h"
#include "model/micro_batch_inputs.h"
#include "model/model_rope_table.h"
#include "model/mtp_module.h"
#include "model/output_head.h"
#include "model/vocab_parallel.h"

namespace hai {

// A micro-batch's losses as host values.
struct MicroBatchLosses {
  TokenLoss lm;
  std::vector<TokenLoss> mtp;  // one per depth
  double balance = 0;          // summed over the MoE layers (MTP blocks included)

  double mtp_mean() const;                        // mean over depths of each depth's mean loss
  double objective(double mtp_loss_weight) const;  // L above
};

// The layout of a micro-batch's loss sums: [loss_slots(D)] fp32,
//   [0] the main head's token losses, [1] the MoE layers' balance losses, [2 + k] MTP depth k + 1's token losses.
int64_t loss_slots(int64_t mtp_depth);
// Views of one slot of the loss sums, each [1].
Tensor lm_loss_slot(const Tensor& loss_sums);
Tensor balance_loss_slot(const Tensor& loss_sums);
Tensor mtp_loss_slot(const Tensor& loss_sums, int64_t depth);  // depth counts from 1
// The host values of `sums` (a host copy of the loss sums) with the micro-batch's counted tokens.
MicroBatchLosses read_losses(const Tensor& sums, const CountedTokens& counted);

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

  // [moe_layers, E] i32 on the model's device: tokens routed to each expert since reset_expert_load(); rows
  // follow moe_layer_indices().
  Tensor expert_load() const { return expert_load_.tensor(); }
  void reset_expert_load();
  // Auxiliary-loss-free balancing: every MoE layer's routing bias += gamma * sign(mean load - load), unless
  // update_scale (the optimizer's [1] fp32 factor on the model's device, framework/device/grad_clip.h) is NaN.
  void update_router_biases(float gamma, const Tensor& update_scale = {});
  // The layer index (as in the HF names) of each row of expert_load().
  const std::vector<int64_t>& moe_layer_indices() const { return moe_layer_indices_; }

  // Marks the phases of train_micro_batch (embedding, each decoder layer's parts, head and loss, MTP, backward of
  // each, the embedding's gradient) and the pool's live bytes after each forward part in `profiler`
  // (framework/metrics/step_profiler.h); null turns it off.
  void set_profiler(StepProfiler* profiler);
  // What every decoder layer (MTP blocks included) recomputes in its backward (DecoderLayer::set_recompute).
  void set_recompute(RecomputeMode mode);
  // Every forward pass (training and evaluation) tells `needed` each gradient bucket (gradient_buckets.h) before
  // it reads its weights: the embedding's (kEmbeddingBucket), each decoder layer's, the head's, each MTP
  // module's. Null: nothing is told.
  void set_parameters_needed(ParametersNeeded needed) { parameters_needed_ = std::move(needed); }

 private:
  struct Pass;
  // grad_scale: training (the routed-token counts are added to expert_load() and the heads compute their
  // gradients, output_head.h); std::nullopt: evaluation.
  Pass forward(const Tensor& tokens, const Tensor& loss_sums, std::optional<float> grad_scale);
  void backward(Pass& pass, float grad_scale, const GradientsFinal& on_final);
  // Host copy of loss sums: [loss_slots] fp32 on the model's device -> host values.
  MicroBatchLosses read_back(const Tensor& loss_sums, const CountedTokens& counted) const;
  Tensor expert_load_row(int64_t row) const;  // [E] i32

  ModelConfig config_;
  const ParameterStore& store_;
  ModelRopeTable rope_;
  VocabParallelEmbedding embedding_;
  std::vector<std::unique_ptr<DecoderLayer>> layers_;
  std::unique_ptr<OutputHead> head_;
  std::vector<std::unique_ptr<MtpModule>> mtp_;
  std::vector<int64_t> moe_layer_indices_;
  OwnedTensor expert_load_;
  StepProfiler* profiler_ = nullptr;
  ParametersNeeded parameters_needed_;
  void need(int bucket) const {
    if (parameters_needed_) parameters_needed_(bucket);
  }
};

}  // namespace hai
