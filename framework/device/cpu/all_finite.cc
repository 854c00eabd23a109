#include "framework/device/cpu/all_finite.h"

#include <cmath>

namespace hai::cpu {

void flag_non_finite(const Tensor& found, const Tensor& x) {
  const float* values = x.data<float>();  // [n]
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) {
      found.data<int32_t>()[0] = 1;
      return;
    }
  }
}

}  // namespace hai::cpu
