#include "framework/device/grad_norm.h"

#include "framework/device/cpu/grad_norm.h"
#include "framework/device/dispatch.h"

namespace hai {

double grad_norm_squared(const std::vector<Tensor>& tensors, Stream) {
  if (tensors.empty()) return 0.0;
  for (const Tensor& tensor : tensors) {
    check_dtype(tensor, DType::f32, "gradient");
    check_same_device(tensor, tensors.front(), "grad_norm_squared");
  }
  if (tensors.front().device().is_cpu()) return cpu::grad_norm_squared(tensors);
  throw_no_backend("grad_norm_squared", tensors.front().device());
}

}  // namespace hai
