#include "framework/device/cpu/elementwise.h"

namespace hai::cpu {

void scale_tensor(const Tensor& tensor, float factor) {
  float* values = tensor.data<float>();  // any shape
  for (int64_t i = 0; i < tensor.numel(); ++i) values[i] *= factor;
}

void add_scaled(const Tensor& y, const Tensor& x, float alpha) {
  float* out = y.data<float>();       // any shape
  const float* in = x.data<float>();  // same shape
  for (int64_t i = 0; i < y.numel(); ++i) out[i] += alpha * in[i];
}

}  // namespace hai::cpu
