#include "framework/device/cast.h"

#include "framework/device/cpu/cast.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/cast.h"
#endif

namespace hai {
namespace {

bool is_castable(DType dtype) { return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16; }

}  // namespace

void cast_tensor(const Tensor& out, const Tensor& x, [[maybe_unused]] Stream stream) {
  HAI_CHECK(out.numel() == x.numel(), "cast_tensor: {} <- {}", out.str(), x.str());
  HAI_CHECK(is_castable(out.dtype()) && is_castable(x.dtype()), "cast_tensor: {} <- {}", out.str(), x.str());
  check_same_device(out, x, "cast_tensor");
  if (out.device().is_cpu()) return cpu::cast_tensor(out, x);
#ifdef HAI_WITH_CUDA
  return cuda::cast_tensor(out, x, stream);
#else
  throw_no_backend("cast_tensor", out.device());
#endif
}

}  // namespace hai
