#include "framework/device/cuda/elementwise.h"

#include "framework/device/cuda/elementwise_kernels.h"
#include "framework/device/cuda/launch.h"

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
