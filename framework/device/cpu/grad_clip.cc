#include "framework/device/cpu/ops.h"

#include <bit>
#include <cmath>
#include <limits>

namespace hai::cpu {

void gradient_update_scale(const Tensor& scale, const Tensor& norm, const Tensor& squared_norms, int64_t mean_over,
                           const GradientClipSettings& settings) {
  const int64_t* words = squared_norms.data<int64_t>();  // [entries] doubles
  auto ranks = static_cast<double>(mean_over);
  double squared = 0.0;
  for (int64_t r = 0; r < squared_norms.numel(); ++r) squared += std::bit_cast<double>(words[r]) / (ranks * ranks);
  double unscaled_norm = std::sqrt(squared) / settings.loss_scale;
  norm.data<int64_t>()[0] = std::bit_cast<int64_t>(unscaled_norm);
  float factor = static_cast<float>(clip_factor(unscaled_norm, settings.max_norm) / settings.loss_scale);
  scale.data<float>()[0] = std::isfinite(unscaled_norm) ? factor / static_cast<float>(ranks)
                                                        : std::numeric_limits<float>::quiet_NaN();
}

}  // namespace hai::cpu
