#include "framework/device/cuda/rmsnorm.h"

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/rmsnorm_kernels.h"
#include "framework/device/cuda/scratch.h"

namespace hai::cuda {

void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight, float eps,
                     Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  check_launch(kernels::rmsnorm_forward(out.raw(), out.dtype() == DType::bf16, rstd.data<float>(), x.data<float>(),
                                        weight.data<float>(), eps, x.size(0), x.size(1), cuda_stream),
               "rmsnorm_forward");
}

void rmsnorm_backward(const Tensor& d_x, const Tensor& d_weight, const Tensor& d_out, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const RmsnormBackwardOptions& options,
                      Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  int64_t rows = x.size(0), width = x.size(1);
  Scratch partial(kernels::rmsnorm_weight_grad_chunks(rows) * width * static_cast<int64_t>(sizeof(float)),
                  cuda_stream);  // [chunks, width] fp32
  check_launch(kernels::rmsnorm_backward(d_x.data<float>(), d_weight.data<float>(),
                                         static_cast<float*>(partial.data()), d_out.data<float>(),
                                         x.data<float>(), weight.data<float>(), rstd.data<float>(), rows, width,
                                         options.weight_grad_beta, cuda_stream),
               "rmsnorm_backward");
}

}  // namespace hai::cuda
