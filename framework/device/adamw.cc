#include "framework/device/adamw.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cpu/adamw_element.h"
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/adamw.cu.
namespace hai::cuda {

kernels::AdamWScalars adamw_scalars(const AdamWSettings& settings) {
  cpu::AdamWConstants constants = cpu::adamw_constants(settings);
  return {.beta1 = constants.beta1,
          .beta2 = constants.beta2,
          .eps = constants.eps,
          .step_size = constants.step_size,
          .bias_correction2_sqrt = constants.bias_correction2_sqrt,
          .decay = constants.decay};
}

void adamw_step(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamWSettings& settings, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(params.device(), stream);
  check_launch(kernels::adamw_step(params.data<float>(), grads.data<float>(), exp_avg.raw(), exp_avg_sq.raw(),
                                   exp_avg.dtype() == DType::bf16, adamw_scalars(settings), params.numel(),
                                   cuda_stream),
               "adamw_step");
}

}  // namespace hai::cuda
#endif

namespace hai {
namespace {

// params, grads, exp_avg, exp_avg_sq: [N]
void check_operands(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq) {
  HAI_CHECK(params.rank() == 1, "adamw parameters must be a flat [N] tensor, got {}", params.str());
  check_dtype(params, DType::f32, "adamw parameters");
  check_dtype(grads, DType::f32, "adamw gradients");
  HAI_CHECK(exp_avg.dtype() == DType::f32 || exp_avg.dtype() == DType::bf16,
            "adamw moments must be fp32 or bf16, got {}", exp_avg.str());
  check_dtype(exp_avg_sq, exp_avg.dtype(), "adamw exp_avg_sq");
  for (const Tensor* tensor : {&grads, &exp_avg, &exp_avg_sq}) {
    check_shape(*tensor, params.shape(), "adamw operand");
    check_same_device(*tensor, params, "adamw");
  }
}

}  // namespace

void check_adamw_settings(const AdamWSettings& settings) {
  HAI_CHECK(settings.step >= 1, "adamw step counts from 1, got {}", settings.step);
  HAI_CHECK(settings.beta1 >= 0.0f && settings.beta1 < 1.0f, "adamw beta1 must be in [0, 1), got {}", settings.beta1);
  HAI_CHECK(settings.beta2 >= 0.0f && settings.beta2 < 1.0f, "adamw beta2 must be in [0, 1), got {}", settings.beta2);
  HAI_CHECK(settings.eps > 0.0f, "adamw eps must be positive, got {}", settings.eps);
}

void adamw_step(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamWSettings& settings, [[maybe_unused]] Stream stream) {
  check_operands(params, grads, exp_avg, exp_avg_sq);
  check_adamw_settings(settings);
  if (params.device().is_cpu()) return cpu::adamw_step(params, grads, exp_avg, exp_avg_sq, settings);
#ifdef HAI_WITH_CUDA
  return cuda::adamw_step(params, grads, exp_avg, exp_avg_sq, settings, stream);
#else
  throw_no_backend("adamw_step", params.device());
#endif
}

}  // namespace hai
