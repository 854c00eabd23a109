#include "framework/device/cuda/grad_clip.h"

#include "framework/device/cuda/grad_clip_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {

void gradient_update_scale(const Tensor& scale, const Tensor& norm, const Tensor& squared_norms, int64_t mean_over,
                           const GradientClipSettings& settings, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(scale.device(), stream);
  check_launch(kernels::gradient_update_scale(scale.data<float>(), static_cast<double*>(norm.raw()),
                                              static_cast<const double*>(squared_norms.raw()), squared_norms.numel(),
                                              mean_over, settings.max_norm, settings.loss_scale, cuda_stream),
               "gradient_update_scale");
}

}  // namespace hai::cuda
