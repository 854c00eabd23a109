#pragma once
// Dynamic loss scaling for fp16 training (docs/architecture.md "Precision", precision.loss_scale): the loss is
// multiplied by scale() so that small gradients survive fp16, and the gradients are divided by it before the optimizer
// sees them. After each step the caller reports whether every rank's gradients were finite:
//   - not finite: the step is skipped, the scale halves (never below `min`) and the count of clean steps restarts;
//   - finite: one more clean step; after `window` clean steps in a row the scale doubles and the count restarts.
// The scaler is pure host state: the caller detects inf/NaN (hai-train: the global gradient norm is not finite,
// the same value on every rank), so every rank's scaler moves alike.

#include <cstdint>

#include "framework/config/config.h"

namespace hai {

class LossScaler {
 public:
  explicit LossScaler(const LossScaleConfig& config);

  double scale() const { return scale_; }
  int64_t clean_steps() const { return clean_steps_; }  // since the last change of the scale

  // Records the outcome of the step that used scale().
  void update(bool gradients_finite);
  // Puts back a state saved with a checkpoint (scale() and clean_steps() of the run that wrote it).
  void restore(double scale, int64_t clean_steps);

 private:
  LossScaleConfig config_;
  double scale_;
  int64_t clean_steps_ = 0;
};

}  // namespace hai
