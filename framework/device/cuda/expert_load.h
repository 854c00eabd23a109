#pragma once
// CUDA implementation of framework/device/expert_load.h (operands already checked by the dispatcher; expert
// indices are not range-checked, see expert_load_kernels.h).

#include "framework/tensor/tensor.h"

namespace hai::cuda {

void accumulate_expert_load(const Tensor& load, const Tensor& topk_indices, Stream stream);
void update_router_bias(const Tensor& bias, const Tensor& load, float gamma, const Tensor& update_scale,
                        Stream stream);

}  // namespace hai::cuda
