#include "framework/device/cuda/adamw.h"

#include <cmath>

#include "framework/device/cuda/adamw_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {
namespace {

// The step's scalars, computed as cpu::adamw_step computes them.
kernels::AdamWScalars scalars_of(const AdamWSettings& settings) {
  double step = static_cast<double>(settings.step);
  double bias_correction1 = 1.0 - std::pow(static_cast<double>(settings.beta1), step);
  double bias_correction2 = 1.0 - std::pow(static_cast<double>(settings.beta2), step);
  return {.beta1 = settings.beta1,
          .beta2 = settings.beta2,
          .eps = settings.eps,
          .step_size = static_cast<float>(settings.lr / bias_correction1),
          .bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2)),
          .decay = 1.0f - settings.lr * settings.weight_decay};
}

}  // namespace

void adamw_step(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamWSettings& settings, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(params.device(), stream);
  check_launch(kernels::adamw_step(params.data<float>(), grads.data<float>(), exp_avg.raw(), exp_avg_sq.raw(),
                                   exp_avg.dtype() == DType::bf16, scalars_of(settings), params.numel(), cuda_stream),
               "adamw_step");
}

}  // namespace hai::cuda
