#include "framework/device/grad_clip.h"

#include <algorithm>
#include <cmath>

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/grad_clip.cu.
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
#endif

namespace hai {

double clip_factor(double norm, double max_norm) {
  HAI_CHECK(max_norm >= 0.0, "the clipping norm must not be negative, got {}", max_norm);
  if (max_norm == 0.0 || !std::isfinite(norm)) return 1.0;
  return std::min(1.0, max_norm / (norm + 1e-6));
}

void gradient_update_scale(const Tensor& scale, const Tensor& norm, const Tensor& squared_norms, int64_t mean_over,
                           const GradientClipSettings& settings, [[maybe_unused]] Stream stream) {
  HAI_CHECK(mean_over >= 1, "the gradients must be sums over at least one rank, got {}", mean_over);
  HAI_CHECK(settings.max_norm >= 0.0, "the clipping norm must not be negative, got {}", settings.max_norm);
  HAI_CHECK(settings.loss_scale > 0.0, "the loss scale must be positive, got {}", settings.loss_scale);
  check_dtype(scale, DType::f32, "update scale");
  check_dtype(norm, DType::i64, "gradient norm");
  check_dtype(squared_norms, DType::i64, "squared gradient norms");
  HAI_CHECK(scale.numel() == 1 && norm.numel() == 1, "update scale and norm must hold one value each, got {} and {}",
            scale.str(), norm.str());
  HAI_CHECK(squared_norms.rank() == 1 && squared_norms.numel() >= 1, "squared gradient norms must be [entries], got {}",
            squared_norms.str());
  check_same_device(norm, scale, "gradient_update_scale");
  check_same_device(squared_norms, scale, "gradient_update_scale");
  if (scale.device().is_cpu()) return cpu::gradient_update_scale(scale, norm, squared_norms, mean_over, settings);
#ifdef HAI_WITH_CUDA
  return cuda::gradient_update_scale(scale, norm, squared_norms, mean_over, settings, stream);
#else
  throw_no_backend("gradient_update_scale", scale.device());
#endif
}

}  // namespace hai
