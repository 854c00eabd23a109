#pragma once
// CPU reference of framework/device/all_finite.h (operands already checked by the dispatcher).

#include "framework/tensor/tensor.h"

namespace hai::cpu {

void flag_non_finite(const Tensor& found, const Tensor& x);

}  // namespace hai::cpu
