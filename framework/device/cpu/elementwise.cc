#include "framework/device/cpu/ops.h"

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

void fill_tensor(const Tensor& tensor, float value) {
  float* values = tensor.data<float>();  // any shape
  for (int64_t i = 0; i < tensor.numel(); ++i) values[i] = value;
}

void accumulate_sum(const Tensor& total, const Tensor& x, float scale) {
  const float* values = x.data<float>();  // any shape
  double sum = 0;
  for (int64_t i = 0; i < x.numel(); ++i) sum += values[i];
  total.data<float>()[0] += static_cast<float>(sum * scale);  // [1]
}

}  // namespace hai::cpu
