#include "framework/device/cpu/ops.h"

namespace hai::cpu {

double grad_norm_squared(const std::vector<Tensor>& tensors) {
  double sum = 0;
  for (const Tensor& tensor : tensors) {
    const float* values = tensor.data<float>();  // any shape
    for (int64_t i = 0; i < tensor.numel(); ++i) sum += static_cast<double>(values[i]) * values[i];
  }
  return sum;
}

}  // namespace hai::cpu
