#pragma once
// CUDA implementation of framework/device/fused_adamw_fp8.h (operands already checked by the dispatcher).

#include <vector>

#include "framework/device/fused_adamw_fp8.h"

namespace hai::cuda {

// The weights' [count, 2] i64 rows (state_offset, weight_decay) on `device`, in the copies' order.
OwnedTensor fused_adamw_fp8_state_table(const std::vector<AdamWSegment>& weights, Device device);

// copies: the weights' FP8 copies (their device table); states: fused_adamw_fp8_state_table of the same weights.
void fused_adamw_fp8_step(const Fp8WeightBatch& copies, const Tensor& states, const Tensor& grads,
                          const Tensor& exp_avg, const Tensor& exp_avg_sq, const AdamWSettings& settings,
                          const GradientScale& gradient_scale, Stream stream);

}  // namespace hai::cuda
