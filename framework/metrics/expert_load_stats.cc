#include "framework/metrics/expert_load_stats.h"

#include <algorithm>
#include <cmath>

namespace hai {

ExpertLoadStats expert_load_stats(const Tensor& load) {
  HAI_CHECK(load.rank() == 1 && load.numel() > 0, "expert load must be a non-empty [E] tensor, got {}", load.str());
  HAI_CHECK(load.device().is_cpu(), "expert load statistics read host memory, got {}", load.str());
  const int32_t* counts = load.data<int32_t>();  // [E]
  int64_t experts = load.numel();
  auto [min, max] = std::minmax_element(counts, counts + experts);
  double mean = 0;
  for (int64_t e = 0; e < experts; ++e) mean += counts[e];
  mean /= static_cast<double>(experts);
  double variance = 0;
  for (int64_t e = 0; e < experts; ++e) variance += (counts[e] - mean) * (counts[e] - mean);
  variance /= static_cast<double>(experts);
  return {*min, *max, mean > 0 ? std::sqrt(variance) / mean : 0.0};
}

}  // namespace hai
