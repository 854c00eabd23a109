#pragma once
// CUDA implementation of framework/device/adamw.h (operands already checked by the dispatcher).

#include "framework/device/adamw.h"

namespace hai::cuda {

void adamw_step(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamWSettings& settings, Stream stream);

}  // namespace hai::cuda
