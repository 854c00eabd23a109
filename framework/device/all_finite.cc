#include "framework/device/all_finite.h"

#include "framework/device/cpu/all_finite.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/all_finite.h"
#endif

namespace hai {

void flag_non_finite(const Tensor& found, const Tensor& x, [[maybe_unused]] Stream stream) {
  check_shape(found, Shape{1}, "non-finite flag");
  check_dtype(found, DType::i32, "non-finite flag");
  check_dtype(x, DType::f32, "tensor checked for inf/NaN");
  check_same_device(found, x, "flag_non_finite");
  if (x.device().is_cpu()) return cpu::flag_non_finite(found, x);
#ifdef HAI_WITH_CUDA
  return cuda::flag_non_finite(found, x, stream);
#else
  throw_no_backend("flag_non_finite", x.device());
#endif
}

}  // namespace hai
