#pragma once
// Zero1Optimizer: AdamW with its state sharded over a data-parallel group (ZeRO stage 1). One step:
//   1. reduce_gradients(): the flat gradient buffer, padded to a multiple of dp (flat_shard.h), is
//      reduce-scattered (sum) so that each rank receives its chunk, then scaled by 1/dp: the mean over the
//      group of the ranks' gradients. Returns the squared L2 norm of the whole mean gradient: each rank's
//      squared shard norm, gathered and summed in rank order in double, so the value is the same on every rank.
//   2. clip(): scales the shard by the global clipping factor (grad_clip.h).
//   3. step(): AdamW on the owned elements only, with the weight decay of the parameter each element belongs to
//      (a chunk boundary may split a parameter), then the updated elements are all-gathered into every rank's
//      full value buffer and the compute copy is refreshed.
// Each rank keeps the two moments for its shard only ([shard().numel()], optimizer.moment_dtype): optimizer
// memory falls as 1/dp. The FP32 values themselves stay whole on every rank (the ParameterStore; the model reads
// them). Every element is reduced and updated by one rank and then copied, so all ranks end bitwise equal.
// On a group of one rank this is the plain optimizer (framework/optim/adamw.h) with no copies: the shard is the
// store's gradient buffer.
//
// Expert parameters reduce over the same group as dense ones: this is right while ep == 1 (expert-DP = DP).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/config/config.h"
#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"
#include "parallel/flat_shard.h"

namespace hai {

class Zero1Optimizer {
 public:
  // The store and the group must outlive the optimizer; every rank of the group holds the same parameter list.
  // Moments start at zero.
  Zero1Optimizer(ParameterStore& store, const OptimizerConfig& config, Communicator& dp);

  // Reduces the store's gradients into this rank's shard (step 1 above); returns the global squared norm.
  double reduce_gradients();
  // Clips the shard's gradients to max_norm (0 = no clipping) given the global squared norm; returns the norm.
  double clip(double squared_norm, double max_norm);
  // One AdamW update of the shard with learning rate `lr` (step_number counts from 1), then the all-gather.
  void step(float lr, int64_t step_number);

  const FlatShard& shard() const { return shard_; }
  Tensor shard_grads() const;  // [shard().numel()] fp32, valid after reduce_gradients()
  // [shard().numel()] moment dtype: element i belongs to trainable element shard().begin + i. Writable (resume).
  Tensor exp_avg() const { return exp_avg_.tensor(); }
  Tensor exp_avg_sq() const { return exp_avg_sq_.tensor(); }
  size_t state_bytes() const { return exp_avg().bytes() + exp_avg_sq().bytes(); }

 private:
  bool sharded() const { return dp_.size() > 1; }
  void gather_values();

  ParameterStore& store_;
  OptimizerConfig config_;
  Communicator& dp_;
  FlatShard shard_;
  std::vector<ShardSegment> own_segments_;  // the owned elements
  std::vector<ShardSegment> all_segments_;  // every trainable element (where gathered values go)
  OwnedTensor staging_;                     // [chunk * dp] fp32, the padded layout; only when sharded
  OwnedTensor reduced_grads_;               // [chunk] fp32, this rank's chunk of the mean; only when sharded
  OwnedTensor exp_avg_;
  OwnedTensor exp_avg_sq_;
};

}  // namespace hai
