#include "framework/device/rmsnorm.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/scratch.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/rmsnorm.cu.
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
#endif

namespace hai {
namespace {

// rows: each [N, D], weight: [D], rstd: [N]
void check_operands(std::initializer_list<const Tensor*> rows, const Tensor& x, const Tensor& weight,
                    const Tensor& rstd) {
  HAI_CHECK(x.rank() == 2, "rmsnorm input must be [N, D], got {}", x.str());
  for (const Tensor* tensor : rows) {
    check_shape(*tensor, x.shape(), "rmsnorm operand");
    check_dtype(*tensor, DType::f32, "rmsnorm operand");
    check_same_device(*tensor, x, "rmsnorm");
  }
  check_shape(weight, Shape{x.size(1)}, "rmsnorm weight");
  check_shape(rstd, Shape{x.size(0)}, "rmsnorm rstd");
  for (const Tensor* tensor : {&weight, &rstd}) {
    check_dtype(*tensor, DType::f32, "rmsnorm operand");
    check_same_device(*tensor, x, "rmsnorm");
  }
}

void check_forward_output(const Tensor& out, const Tensor& x, float eps) {
  check_shape(out, x.shape(), "rmsnorm output");
  HAI_CHECK(out.dtype() == DType::f32 || out.dtype() == DType::bf16, "rmsnorm output must be fp32 or bf16, got {}",
            out.str());
  check_same_device(out, x, "rmsnorm");
  HAI_CHECK(eps >= 0.0f, "rmsnorm eps must not be negative, got {}", eps);
}

// copy: [N, D] bf16, the rounding of `of` ([N, D] fp32) written beside it.
void check_rounded_copy(const Tensor& copy, const Tensor& of, const char* what) {
  check_shape(copy, of.shape(), what);
  check_dtype(copy, DType::bf16, what);
  HAI_CHECK(of.dtype() == DType::f32, "{} is written beside an fp32 result, not {}", what, of.str());
  check_same_device(copy, of, "rmsnorm");
}

}  // namespace

void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight, float eps,
                     [[maybe_unused]] Stream stream) {
  check_operands({&x}, x, weight, rstd);
  check_forward_output(out, x, eps);
  if (x.device().is_cpu()) return cpu::rmsnorm_forward(out, rstd, x, weight, eps);
#ifdef HAI_WITH_CUDA
  return cuda::rmsnorm_forward(out, rstd, x, weight, eps, stream);
#else
  throw_no_backend("rmsnorm_forward", x.device());
#endif
}

void add_rmsnorm_forward(const Tensor& sum, const Tensor& out, const Tensor& rstd, const Tensor& a, const Tensor& b,
                         const Tensor& weight, float eps, const Tensor& out_bf16, [[maybe_unused]] Stream stream) {
  check_operands({&sum, &a, &b}, sum, weight, rstd);
  check_forward_output(out, sum, eps);
  if (out_bf16.defined()) check_rounded_copy(out_bf16, out, "rmsnorm out_bf16");
  if (sum.device().is_cpu()) return cpu::add_rmsnorm_forward(sum, out, rstd, a, b, weight, eps, out_bf16);
#ifdef HAI_WITH_CUDA
  return cuda::add_rmsnorm_forward(sum, out, rstd, a, b, weight, eps, out_bf16, stream);
#else
  throw_no_backend("add_rmsnorm_forward", sum.device());
#endif
}

void rmsnorm_backward(const Tensor& d_x, const Tensor& d_weight, const Tensor& d_out, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const RmsnormBackwardOptions& options,
                      [[maybe_unused]] Stream stream) {
  check_operands({&d_x, &d_out, &x}, x, weight, rstd);
  if (options.residual_grad.defined()) check_operands({&options.residual_grad}, x, weight, rstd);
  if (options.d_x_bf16.defined()) check_rounded_copy(options.d_x_bf16, d_x, "rmsnorm d_x_bf16");
  check_shape(d_weight, weight.shape(), "rmsnorm d_weight");
  check_dtype(d_weight, DType::f32, "rmsnorm d_weight");
  check_same_device(d_weight, x, "rmsnorm");
  HAI_CHECK(options.weight_grad_beta == 0.0f || options.weight_grad_beta == 1.0f,
            "rmsnorm weight_grad_beta must be 0 or 1, got {}", options.weight_grad_beta);
  if (x.device().is_cpu()) return cpu::rmsnorm_backward(d_x, d_weight, d_out, x, weight, rstd, options);
#ifdef HAI_WITH_CUDA
  return cuda::rmsnorm_backward(d_x, d_weight, d_out, x, weight, rstd, options, stream);
#else
  throw_no_backend("rmsnorm_backward", x.device());
#endif
}

}  // namespace hai
