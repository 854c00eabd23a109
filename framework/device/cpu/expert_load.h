#pragma once
// CPU reference of framework/device/expert_load.h (operands already checked by the dispatcher).

#include "framework/tensor/tensor.h"

namespace hai::cpu {

void accumulate_expert_load(const Tensor& load, const Tensor& topk_indices);
void update_router_bias(const Tensor& bias, const Tensor& load, float gamma, const Tensor& update_scale);

}  // namespace hai::cpu
