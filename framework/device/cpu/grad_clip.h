#pragma once
// CPU reference of framework/device/grad_clip.h (operands already checked by the dispatcher).

#include "framework/device/grad_clip.h"

namespace hai::cpu {

void gradient_update_scale(const Tensor& scale, const Tensor& norm, const Tensor& squared_norms, int64_t mean_over,
                           const GradientClipSettings& settings);

}  // namespace hai::cpu
