#pragma once
// CPU reference of framework/device/fused_adamw.h (operands already checked by the dispatcher).

#include "framework/device/fused_adamw.h"

namespace hai::cpu {

void fused_adamw_step(const Tensor& values, const Tensor& compute, const Tensor& grads, const Tensor& exp_avg,
                      const Tensor& exp_avg_sq, const AdamWSegmentTable& segments, const AdamWSettings& settings,
                      const GradientScale& gradient_scale);

}  // namespace hai::cpu
