#include "framework/device/cuda/rmsnorm.h"

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/rmsnorm_kernels.h"

namespace hai::cuda {

void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight, float eps,
                     Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  check_launch(kernels::rmsnorm_forward(out.data<float>(), rstd.data<float>(), x.data<float>(), weight.data<float>(),
                                        eps, x.size(0), x.size(1), cuda_stream),
               "rmsnorm_forward");
}

void rmsnorm_backward(const Tensor& d_x, const Tensor& d_weight, const Tensor& d_out, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  check_launch(kernels::rmsnorm_backward(d_x.data<float>(), d_weight.data<float>(), d_out.data<float>(),
                                         x.data<float>(), weight.data<float>(), rstd.data<float>(), x.size(0),
                                         x.size(1), cuda_stream),
               "rmsnorm_backward");
}

}  // namespace hai::cuda
