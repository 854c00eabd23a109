#pragma once
// CUDA implementation of framework/device/grad_clip.h (operands already checked by the dispatcher).

#include "framework/device/grad_clip.h"

namespace hai::cuda {

void gradient_update_scale(const Tensor& scale, const Tensor& norm, const Tensor& squared_norms, int64_t mean_over,
                           const GradientClipSettings& settings, Stream stream);

}  // namespace hai::cuda
