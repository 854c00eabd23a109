#pragma once
// CPU reference of framework/device/grad_norm.h (operands already checked by the dispatcher).

#include <vector>

#include "framework/tensor/tensor.h"

namespace hai::cpu {

double grad_norm_squared(const std::vector<Tensor>& tensors);

}  // namespace hai::cpu
