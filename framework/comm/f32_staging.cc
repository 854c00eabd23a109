#include "framework/comm/f32_staging.h"

namespace hai {

bool needs_f32_staging(DType dtype) { return dtype == DType::bf16 || dtype == DType::f16; }

std::vector<float> widen_to_f32(const Tensor& tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.numel()));
  if (tensor.dtype() == DType::bf16) {
    const bf16* source = tensor.data<bf16>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = bf16_to_float(source[i].bits);
    return values;
  }
  const fp16* source = tensor.data<fp16>();
  for (size_t i = 0; i < values.size(); ++i) values[i] = fp16_to_float(source[i].bits);
  return values;
}

void narrow_from_f32(const Tensor& tensor, std::span<const float> values) {
  HAI_CHECK(static_cast<int64_t>(values.size()) == tensor.numel(), "narrow_from_f32: {} values into {}",
            values.size(), tensor.str());
  if (tensor.dtype() == DType::bf16) {
    bf16* target = tensor.data<bf16>();
    for (size_t i = 0; i < values.size(); ++i) target[i].bits = float_to_bf16(values[i]);
    return;
  }
  fp16* target = tensor.data<fp16>();
  for (size_t i = 0; i < values.size(); ++i) target[i].bits = float_to_fp16(values[i]);
}

}  // namespace hai
