#include "framework/device/elementwise.h"

#include "framework/device/cpu/elementwise.h"
#include "framework/device/dispatch.h"

namespace hai {

void scale_tensor(const Tensor& tensor, float factor, Stream) {
  check_dtype(tensor, DType::f32, "scale_tensor operand");
  if (tensor.device().is_cpu()) return cpu::scale_tensor(tensor, factor);
  throw_no_backend("scale_tensor", tensor.device());
}

void add_scaled(const Tensor& y, const Tensor& x, float alpha, Stream) {
  check_shape(x, y.shape(), "add_scaled x");
  check_dtype(y, DType::f32, "add_scaled y");
  check_dtype(x, DType::f32, "add_scaled x");
  check_same_device(x, y, "add_scaled");
  if (y.device().is_cpu()) return cpu::add_scaled(y, x, alpha);
  throw_no_backend("add_scaled", y.device());
}

}  // namespace hai
