#include "framework/device/cpu/ops.h"

#include <cstring>

namespace hai::cpu {
namespace {

float load(const void* data, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::bf16: return bf16_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::f16: return fp16_to_float(static_cast<const uint16_t*>(data)[i]);
    default: return static_cast<const float*>(data)[i];
  }
}

void store(void* data, DType dtype, int64_t i, float value) {
  switch (dtype) {
    case DType::bf16: static_cast<uint16_t*>(data)[i] = float_to_bf16(value); break;
    case DType::f16: static_cast<uint16_t*>(data)[i] = float_to_fp16(value); break;
    default: static_cast<float*>(data)[i] = value; break;
  }
}

}  // namespace

void cast_tensor(const Tensor& out, const Tensor& x) {
  if (out.dtype() == x.dtype()) {
    if (out.raw() != x.raw()) std::memmove(out.raw(), x.raw(), x.bytes());
    return;
  }
  for (int64_t i = 0; i < x.numel(); ++i) store(out.raw(), out.dtype(), i, load(x.raw(), x.dtype(), i));
}

}  // namespace hai::cpu
