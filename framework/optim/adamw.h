#pragma once
// AdamW over a ParameterStore: the FP32 master values are updated in place from the FP32 gradients, with the two
// moment buffers (exp_avg, exp_avg_sq) laid out flat like the gradient buffer ([N_trainable], element i belongs to
// the parameter whose grad_offset covers i) in optimizer.moment_dtype. Weight decay applies only to parameters whose
// spec asks for it (not norms and biases); non-trainable parameters are never touched. Each step first zero-fills
// the gradients nothing wrote (ParameterStore::zero_unwritten_grads); after it the store's compute copy is
// refreshed.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/config/config.h"
#include "framework/device/adamw.h"
#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"

namespace hai {

// The element type of the moment buffers for optimizer.moment_dtype.
DType moment_dtype(MomentDType dtype);

// The AdamW settings of one step (framework/device/adamw.h) from the optimizer config, with weight decay on (the
// caller sets 0 for parameters that take none).
AdamWSettings adamw_settings(const OptimizerConfig& config, float lr, int64_t step_number);

class AdamW {
 public:
  // The store must outlive the optimizer. Moments start at zero.
  AdamW(ParameterStore& store, const OptimizerConfig& config);

  // One update of every trainable parameter with learning rate `lr`; step_number counts from 1 (bias correction).
  void step(float lr, int64_t step_number);

  Tensor exp_avg() const { return exp_avg_.tensor(); }        // [N_trainable] moment dtype
  Tensor exp_avg_sq() const { return exp_avg_sq_.tensor(); }  // [N_trainable] moment dtype
  size_t state_bytes() const { return exp_avg().bytes() + exp_avg_sq().bytes(); }

 private:
  // A run of trainable parameters contiguous in both the value and the gradient buffer, with one weight decay:
  // one adamw_step call each.
  struct Segment {
    int64_t value_offset = 0;
    int64_t grad_offset = 0;
    int64_t numel = 0;
    bool weight_decay = false;
  };

  static std::vector<Segment> segments_of(const ParameterStore& store);

  ParameterStore& store_;
  OptimizerConfig config_;
  std::vector<Segment> segments_;
  OwnedTensor exp_avg_;
  OwnedTensor exp_avg_sq_;
};

}  // namespace hai
