#include "framework/device/cast.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/cast.cu.
namespace hai::cuda {
namespace {

kernels::FloatFormat format_of(DType dtype) {
  switch (dtype) {
    case DType::bf16: return kernels::FloatFormat::bf16;
    case DType::f16: return kernels::FloatFormat::f16;
    default: return kernels::FloatFormat::f32;
  }
}

}  // namespace

void cast_tensor(const Tensor& out, const Tensor& x, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(out.device(), stream);
  if (out.dtype() == x.dtype()) {
    if (out.raw() != x.raw()) {
      HAI_CUDA_CHECK(cudaMemcpyAsync(out.raw(), x.raw(), x.bytes(), cudaMemcpyDeviceToDevice, cuda_stream));
    }
    return;
  }
  check_launch(kernels::cast(out.raw(), format_of(out.dtype()), x.raw(), format_of(x.dtype()), x.numel(), cuda_stream),
               "cast_tensor");
}

}  // namespace hai::cuda
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
