#include "framework/device/dispatch.h"

namespace hai {

void throw_no_backend(const char* op, Device device) {
  HAI_THROW("{} has no implementation for tensors on {}", op, to_string(device));
}

bool tensors_overlap(const Tensor& a, const Tensor& b) {
  const char* a_begin = static_cast<const char*>(a.raw());
  const char* b_begin = static_cast<const char*>(b.raw());
  return a.bytes() > 0 && b.bytes() > 0 && a_begin < b_begin + b.bytes() && b_begin < a_begin + a.bytes();
}

}  // namespace hai
