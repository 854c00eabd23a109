#include "framework/device/elementwise.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/elementwise.cu.
namespace hai::cuda {

void scale_tensor(const Tensor& tensor, float factor, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(tensor.device(), stream);
  check_launch(kernels::scale(tensor.data<float>(), factor, tensor.numel(), cuda_stream), "scale_tensor");
}

void add_scaled(const Tensor& y, const Tensor& x, float alpha, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(y.device(), stream);
  check_launch(kernels::add_scaled(y.data<float>(), x.data<float>(), alpha, y.numel(), cuda_stream), "add_scaled");
}

void fill_tensor(const Tensor& tensor, float value, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(tensor.device(), stream);
  check_launch(kernels::fill(tensor.data<float>(), value, tensor.numel(), cuda_stream), "fill_tensor");
}

void accumulate_sum(const Tensor& total, const Tensor& x, float scale, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(total.device(), stream);
  check_launch(kernels::accumulate_sum(total.data<float>(), x.data<float>(), scale, x.numel(), cuda_stream),
               "accumulate_sum");
}

}  // namespace hai::cuda
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

void fill_tensor(const Tensor& tensor, float value, [[maybe_unused]] Stream stream) {
  check_dtype(tensor, DType::f32, "fill_tensor operand");
  if (tensor.device().is_cpu()) return cpu::fill_tensor(tensor, value);
#ifdef HAI_WITH_CUDA
  return cuda::fill_tensor(tensor, value, stream);
#else
  throw_no_backend("fill_tensor", tensor.device());
#endif
}

void accumulate_sum(const Tensor& total, const Tensor& x, float scale, [[maybe_unused]] Stream stream) {
  check_shape(total, Shape{1}, "accumulate_sum total");
  check_dtype(total, DType::f32, "accumulate_sum total");
  check_dtype(x, DType::f32, "accumulate_sum x");
  check_same_device(x, total, "accumulate_sum");
  if (total.device().is_cpu()) return cpu::accumulate_sum(total, x, scale);
#ifdef HAI_WITH_CUDA
  return cuda::accumulate_sum(total, x, scale, stream);
#else
  throw_no_backend("accumulate_sum", total.device());
#endif
}

}  // namespace hai
