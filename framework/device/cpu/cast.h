#pragma once
// CPU reference of framework/device/cast.h (operands already checked by the dispatcher).

#include "framework/tensor/tensor.h"

namespace hai::cpu {

void cast_tensor(const Tensor& out, const Tensor& x);

}  // namespace hai::cpu
