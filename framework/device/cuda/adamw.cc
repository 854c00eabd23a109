#include "framework/device/cuda/adamw.h"

#include "framework/device/cpu/adamw_element.h"
#include "framework/device/cuda/launch.h"

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
