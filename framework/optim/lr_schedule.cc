#include "framework/optim/lr_schedule.h"

#include <cmath>
#include <numbers>

#include "framework/core/error.h"

namespace hai {
namespace {

// From `high` at progress 0 to `low` at progress 1 along half a cosine.
double cosine_decay(double high, double low, double progress) {
  return low + (high - low) * (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
}

double deepseek_v3_lr(const OptimizerConfig& optimizer, double total_steps, double step) {
  const DeepseekV3ScheduleConfig& stages = optimizer.deepseek_v3;
  double decay_start = stages.decay_start * total_steps;
  double decay_end = stages.decay_end * total_steps;
  if (step <= decay_start) return optimizer.lr;
  if (step <= decay_end) {
    return cosine_decay(optimizer.lr, optimizer.min_lr, (step - decay_start) / (decay_end - decay_start));
  }
  if (step <= stages.final_start * total_steps) return optimizer.min_lr;
  return stages.final_lr;
}

}  // namespace

double learning_rate(const OptimizerConfig& optimizer, int64_t total_steps, int64_t step) {
  HAI_CHECK(step >= 1 && step <= total_steps, "learning rate asked for step {} of {} (steps count from 1)", step,
            total_steps);
  int64_t warmup = optimizer.warmup_steps;
  if (step <= warmup) return optimizer.lr * (static_cast<double>(step) / static_cast<double>(warmup));
  switch (optimizer.schedule) {
    case LrSchedule::constant: return optimizer.lr;
    case LrSchedule::cosine:
      return cosine_decay(optimizer.lr, optimizer.min_lr,
                          static_cast<double>(step - warmup) / static_cast<double>(total_steps - warmup));
    case LrSchedule::deepseek_v3:
      return deepseek_v3_lr(optimizer, static_cast<double>(total_steps), static_cast<double>(step));
  }
  HAI_THROW("unknown learning-rate schedule {}", static_cast<int>(optimizer.schedule));
}

}  // namespace hai
