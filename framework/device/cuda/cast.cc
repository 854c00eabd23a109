#include "framework/device/cuda/cast.h"

#include "framework/device/cuda/cast_kernels.h"
#include "framework/device/cuda/launch.h"

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
