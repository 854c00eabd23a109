#include "framework/device/cpu/ops.h"

#include <cmath>

namespace hai::cpu {

void accumulate_expert_load(const Tensor& load, const Tensor& topk_indices) {
  const int64_t experts = load.size(0);
  const int32_t* index_data = topk_indices.data<int32_t>();  // [T, K]
  int32_t* load_data = load.data<int32_t>();                 // [E]
  for (int64_t i = 0; i < topk_indices.numel(); ++i) {
    HAI_CHECK(index_data[i] >= 0 && index_data[i] < experts, "expert load: expert index {} outside [0, {})",
              index_data[i], experts);
    ++load_data[index_data[i]];
  }
}

void update_router_bias(const Tensor& bias, const Tensor& load, float gamma, const Tensor& update_scale) {
  if (update_scale.defined() && std::isnan(update_scale.data<float>()[0])) return;  // a skipped step
  const int64_t experts = bias.size(0);
  const int32_t* load_data = load.data<int32_t>();  // [E]
  float* bias_data = bias.data<float>();            // [E]
  int64_t total = 0;
  for (int64_t e = 0; e < experts; ++e) total += load_data[e];
  for (int64_t e = 0; e < experts; ++e) {
    int64_t mean_minus_load = total - experts * static_cast<int64_t>(load_data[e]);  // times E, exact
    float sign = mean_minus_load > 0 ? 1.0f : (mean_minus_load < 0 ? -1.0f : 0.0f);
    bias_data[e] += gamma * sign;
  }
}

}  // namespace hai::cpu
