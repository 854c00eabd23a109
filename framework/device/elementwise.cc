#include "framework/device/elementwise.h"

#include "framework/device/cpu/elementwise.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/elementwise.h"
#endif

namespace hai {

void scale_tensor(const Tensor& tensor, float factor, [[maybe_unused]] Stream stream) {
  check_dtype(tensor, DType::f32, "scale_tensor operand");
  if (tensor.device().is_cpu()) return cpu::scale_tensor(tensor, factor);
#ifdef HAI_WITH_CUDA
  return cuda::scale_tensor(tensor, factor, stream);
#else
  throw_no_backend("scale_tensor", tensor.device());
#endif
}

void add_scaled(const Tensor& y, const Tensor& x, float alpha, [[maybe_unused]] Stream stream) {
  check_shape(x, y.shape(), "add_scaled x");
  check_dtype(y, DType::f32, "add_scaled y");
  check_dtype(x, DType::f32, "add_scaled x");
  check_same_device(x, y, "add_scaled");
  if (y.device().is_cpu()) return cpu::add_scaled(y, x, alpha);
#ifdef HAI_WITH_CUDA
  return cuda::add_scaled(y, x, alpha, stream);
#else
  throw_no_backend("add_scaled", y.device());
#endif
}

}  // namespace hai
