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

void add_rmsnorm_forward(const Tensor& sum, const Tensor& out, const Tensor& rstd, const Tensor& a, const Tensor& b,
                         const Tensor& weight, float eps, const Tensor& out_bf16, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(sum.device(), stream);
  void* rounded = out_bf16.defined() ? out_bf16.raw() : nullptr;  // [N, D] bf16, or none
  check_launch(kernels::add_rmsnorm_forward(sum.data<float>(), out.raw(), out.dtype() == DType::bf16, rounded,
                                            rstd.data<float>(), a.data<float>(), b.data<float>(),
                                            weight.data<float>(), eps, sum.size(0), sum.size(1), cuda_stream),
               "add_rmsnorm_forward");
}

void rmsnorm_backward(const Tensor& d_x, const Tensor& d_weight, const Tensor& d_out, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const RmsnormBackwardOptions& options,
                      Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  int64_t rows = x.size(0), width = x.size(1);
  Scratch partial(kernels::rmsnorm_weight_grad_chunks(rows) * width * static_cast<int64_t>(sizeof(float)),
                  cuda_stream);  // [chunks, width] fp32
  const float* residual_grad = options.residual_grad.defined() ? options.residual_grad.data<float>() : nullptr;
  check_launch(kernels::rmsnorm_backward({.d_x = d_x.data<float>(),
                                          .d_x_bf16 = options.d_x_bf16.defined() ? options.d_x_bf16.raw() : nullptr,
                                          .d_weight = d_weight.data<float>(),
                                          .partial = static_cast<float*>(partial.data()),
                                          .residual_grad = residual_grad,
                                          .d_out = d_out.data<float>(),
                                          .x = x.data<float>(),
                                          .weight = weight.data<float>(),
                                          .rstd = rstd.data<float>(),
                                          .rows = rows,
                                          .width = width,
                                          .weight_grad_beta = options.weight_grad_beta},
                                         cuda_stream),
               "rmsnorm_backward");
}

}  // namespace hai::cuda
