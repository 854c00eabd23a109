#include "framework/device/grad_norm.h"

#include "framework/device/cpu/grad_norm.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/grad_norm.h"
#endif

namespace hai {

double grad_norm_squared(const std::vector<Tensor>& tensors, [[maybe_unused]] Stream stream) {
  if (tensors.empty()) return 0.0;
  for (const Tensor& tensor : tensors) {
    check_dtype(tensor, DType::f32, "gradient");
    check_same_device(tensor, tensors.front(), "grad_norm_squared");
  }
  if (tensors.front().device().is_cpu()) return cpu::grad_norm_squared(tensors);
#ifdef HAI_WITH_CUDA
  return cuda::grad_norm_squared(tensors, stream);
#else
  throw_no_backend("grad_norm_squared", tensors.front().device());
#endif
}

}  // namespace hai
