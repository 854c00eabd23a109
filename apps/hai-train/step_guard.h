#pragma once
// StepGuard: what the ranks check, and agree on, at every step boundary (docs/reliability.md):
//   - the weights: the squared norm of the fp32 master values (framework/device/grad_norm.h, in double: non-finite
//     exactly when some value is), queued after a step whose gradients were not finite (weights that are not
//     finite make every step that reads them skip; a step that skips updates nothing, so the values are the last
//     update's) and read at that step's boundary: a finite step pays nothing. A non-finite value on any rank ends
//     the run with an error naming the update that made it, before any later checkpoint (a checkpoint also checks
//     its own values when it is saved, which catches a weight no step reads);
//   - consecutive skipped steps (non-finite gradients) against train.max_skipped_steps: too many end the run;
//   - a stop signal (runtime.stop_signals, framework/core/stop_signal.h) on any rank: every rank stops after the
//     same step.
// The agreement is one small all-gather of host values over the world per step.

#include <cstdint>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/core/stop_signal.h"
#include "framework/tensor/tensor.h"

namespace hai {

class StepGuard {
 public:
  // max_skipped_steps: 0 = no limit. values: fp32, this rank's master values (ZeRO-1's shards of the sharded ones,
  // Zero1Optimizer::master_values), at least one tensor, all on one device.
  StepGuard(int64_t max_skipped_steps, std::vector<Tensor> values);

  // Signals to poll at each boundary (null: none); must outlive the guard or be reset.
  void watch(const StopSignals* signals) { signals_ = signals; }
  // Queues the squared norm of the values on the device (waits for nothing).
  void queue_value_check();
  // Counts step `step` as skipped or not; throws hai::Error after max_skipped_steps skipped steps in a row.
  void count_step(int64_t step, bool skipped);
  // After step `step`, on every rank of `world`: reads the queued value check (throws hai::Error when some rank's
  // values are not finite), and returns the stop signal some rank received (the lowest rank's), 0 for none.
  int agree(Communicator& world, int64_t step);

 private:
  int64_t max_skipped_steps_;
  std::vector<Tensor> values_;
  OwnedTensor squared_norm_;  // [1] i64 on the values' device: a double's bits
  OwnedTensor scratch_;       // grad_norm_squared_to's
  const StopSignals* signals_ = nullptr;
  int64_t skipped_in_a_row_ = 0;
  bool queued_ = false;
};

}  // namespace hai
