#include "apps/hai-train/step_guard.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "framework/core/error.h"
#include "framework/device/grad_norm.h"

namespace hai {

StepGuard::StepGuard(int64_t max_skipped_steps, std::vector<Tensor> values)
    : max_skipped_steps_(max_skipped_steps),
      values_(std::move(values)),
      squared_norm_(Shape{1}, DType::i64, values_.at(0).device()),
      scratch_(Shape{std::max<int64_t>(1, grad_norm_scratch_size(values_))}, DType::i64, values_.at(0).device()) {}

void StepGuard::queue_value_check() {
  grad_norm_squared_to(squared_norm_, values_, scratch_);
  queued_ = true;
}

void StepGuard::count_step(int64_t step, bool skipped) {
  skipped_in_a_row_ = skipped ? skipped_in_a_row_ + 1 : 0;
  if (max_skipped_steps_ == 0 || skipped_in_a_row_ < max_skipped_steps_) return;
  HAI_THROW("step {}: the training diverged: the gradients were not finite in {} steps in a row "
            "(train.max_skipped_steps = {}), every update skipped; resume from the last checkpoint with a smaller "
            "optimizer.lr (or a larger precision.loss_scale.min under fp16)",
            step, skipped_in_a_row_, max_skipped_steps_);
}

int StepGuard::agree(Communicator& world, int64_t step) {
  bool finite = true;
  if (queued_) {
    OwnedTensor bits = host_copy(squared_norm_);  // [1] i64
    finite = std::isfinite(std::bit_cast<double>(bits.tensor().data<int64_t>()[0]));
    queued_ = false;
  }
  OwnedTensor mine(Shape{2}, DType::i64);                // [finite, signal]
  OwnedTensor all(Shape{world.size(), 2}, DType::i64);  // [ranks, 2]
  mine.tensor().data<int64_t>()[0] = finite ? 1 : 0;
  mine.tensor().data<int64_t>()[1] = signals_ ? signals_->received() : 0;
  world.all_gather(all, mine);
  int signal = 0;
  for (int rank = world.size() - 1; rank >= 0; --rank) {
    const int64_t* row = all.tensor().data<int64_t>() + 2 * rank;
    if (row[0] == 0) {
      HAI_THROW("step {}: the training diverged: the update of step {} made weights not finite (inf or NaN) on rank "
                "{}; the run stops without saving them: resume from the last checkpoint with a smaller optimizer.lr",
                step, step - 1, rank);
    }
    if (row[1] != 0) signal = static_cast<int>(row[1]);
  }
  return signal;
}

}  // namespace hai
