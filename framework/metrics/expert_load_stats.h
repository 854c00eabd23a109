#pragma once
// How evenly a MoE layer's routed experts were loaded over a step: from the per-expert token counts (the load
// buffer of accumulate_expert_load, framework/device/expert_load.h, after its all-reduce), the smallest and largest
// count and the coefficient of variation std / mean (population std; 0 = perfectly balanced).

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai {

struct ExpertLoadStats {
  int64_t min = 0;
  int64_t max = 0;
  double cv = 0.0;  // 0 when no token was routed
};

// load: [E] i32 host, E >= 1
ExpertLoadStats expert_load_stats(const Tensor& load);

}  // namespace hai
