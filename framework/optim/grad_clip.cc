#include "framework/optim/grad_clip.h"

#include <algorithm>
#include <cmath>

#include "framework/core/error.h"

namespace hai {

double clip_factor(double norm, double max_norm) {
  HAI_CHECK(max_norm >= 0.0, "the clipping norm must not be negative, got {}", max_norm);
  if (max_norm == 0.0 || !std::isfinite(norm)) return 1.0;
  return std::min(1.0, max_norm / (norm + 1e-6));
}

}  // namespace hai
