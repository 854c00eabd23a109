#include "framework/optim/grad_clip.h"

#include <algorithm>
#include <cmath>

#include "framework/device/elementwise.h"

namespace hai {

double clip_gradients(const std::vector<Tensor>& grads, double squared_norm, double max_norm, Stream stream) {
  HAI_CHECK(max_norm >= 0.0, "the clipping norm must not be negative, got {}", max_norm);
  double norm = std::sqrt(squared_norm);
  if (max_norm == 0.0 || !std::isfinite(norm)) return norm;
  double factor = std::min(1.0, max_norm / (norm + 1e-6));
  if (factor == 1.0) return norm;
  for (const Tensor& grad : grads) scale_tensor(grad, static_cast<float>(factor), stream);
  return norm;
}

}  // namespace hai
