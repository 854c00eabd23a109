#pragma once
// The learning rate of an optimizer step as a pure function of the step (counted from 1), the optimizer config and
// the total number of steps (train.steps). Every schedule warms up linearly from 0: step s <= warmup_steps gets
// lr * s / warmup_steps. After warm-up (docs/config.md "Learning-rate schedules"):
// - constant:    lr.
// - cosine:      min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2, p = (s - warmup) / (steps - warmup), so the
//                last step gets exactly min_lr.
// - deepseek_v3: lr while s <= decay_start * steps; cosine from lr to min_lr while s <= decay_end * steps (p
//                going from 0 at decay_start * steps to 1 at decay_end * steps); min_lr while
//                s <= final_start * steps; final_lr after. A stage that ends inside the warm-up is overridden by it.

#include <cstdint>

#include "framework/config/config.h"

namespace hai {

double learning_rate(const OptimizerConfig& optimizer, int64_t total_steps, int64_t step);

}  // namespace hai
