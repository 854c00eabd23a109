#pragma once
// The whole DeepSeek-V3 model on one rank: embedding, decoder layers, final norm and output head, MTP modules.
// One call runs forward and backward of a micro-batch and accumulates the gradients into the ParameterStore.
//
// The objective of a micro-batch (reference/deepseek-v3.md):
//   L = L_main + mtp_loss_weight / D * sum_k L_k + sum over MoE layers of the sequence-wise balance loss
// L_main and L_k are means over the counted tokens of the micro-batch.

#include <memory>
#include <vector>

#include "framework/device/rope_table.h"
#include "model/decoder_layer.h"
#include "model/mtp_module.h"
#include "model/output_head.h"

namespace hai {

struct MicroBatchLosses {
  TokenLoss lm;
  std::vector<TokenLoss> mtp;  // one per depth
  double balance = 0;          // summed over the MoE layers (MTP blocks included)

  double mtp_mean() const;                        // mean over depths of each depth's mean loss
  double objective(double mtp_loss_weight) const;  // L above
};

class DeepseekV3Model {
 public:
  DeepseekV3Model(const ModelConfig& model, const ParameterStore& store);
  ~DeepseekV3Model();
  DeepseekV3Model(const DeepseekV3Model&) = delete;
  DeepseekV3Model& operator=(const DeepseekV3Model&) = delete;

  // Forward + backward of one micro-batch: tokens [B, S + 1] i32 (inputs tokens[:, :S], targets tokens[:, 1:]).
  // The gradients of grad_scale * L accumulate into the store; the routed-token counts into expert_load().
  MicroBatchLosses train_micro_batch(const Tensor& tokens, float grad_scale);
  // Forward only.
  MicroBatchLosses evaluate(const Tensor& tokens);

  // [moe_layers, E] i32: tokens routed to each expert since reset_expert_load(); rows follow moe_layer_names().
  Tensor expert_load() const { return expert_load_.tensor(); }
  void reset_expert_load();
  // Auxiliary-loss-free balancing: every MoE layer's routing bias += gamma * sign(mean load - load).
  void update_router_biases(float gamma);
  // The layer index (as in the HF names) of each row of expert_load().
  const std::vector<int64_t>& moe_layer_indices() const { return moe_layer_indices_; }

 private:
  struct Pass;
  Pass forward(const Tensor& tokens);
  void backward(Pass& pass, float grad_scale);
  Tensor expert_load_row(int64_t row) const;  // [E] i32

  ModelConfig config_;
  const ParameterStore& store_;
  OwnedTensor rope_cos_, rope_sin_;
  RopeTable rope_;
  std::vector<std::unique_ptr<DecoderLayer>> layers_;
  std::unique_ptr<OutputHead> head_;
  std::vector<std::unique_ptr<MtpModule>> mtp_;
  std::vector<int64_t> moe_layer_indices_;
  OwnedTensor expert_load_;
};

}  // namespace hai
