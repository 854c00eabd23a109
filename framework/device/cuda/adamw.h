#pragma once
// CUDA implementation of framework/device/adamw.h (operands already checked by the dispatcher).

#include "framework/device/adamw.h"
#include "framework/device/cuda/adamw_kernels.h"

namespace hai::cuda {

// The step's scalars: the CPU op's (framework/device/cpu/adamw_element.h), so both round alike.
kernels::AdamWScalars adamw_scalars(const AdamWSettings& settings);

void adamw_step(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamWSettings& settings, Stream stream);

}  // namespace hai::cuda
