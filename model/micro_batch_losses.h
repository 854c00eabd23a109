#pragma once
// A micro-batch's loss sums: the small device tensor the model's forward adds its losses into, its slots, and
// their host values. Nothing in the forward reads them back: the caller does, once (the trainer: once per step).
//
// The objective of a micro-batch (docs/deepseek-v3.md):
//   L = L_main + mtp_loss_weight / D * sum_k L_k + sum over MoE layers of the sequence-wise balance loss
// L_main and L_k are means over the counted tokens of the micro-batch.

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"
#include "model/micro_batch_inputs.h"
#include "model/output_head.h"

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

}  // namespace hai
