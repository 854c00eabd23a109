#pragma once
// CUDA implementation of framework/device/all_finite.h (operands already checked by the dispatcher).

#include "framework/tensor/tensor.h"

namespace hai::cuda {

void flag_non_finite(const Tensor& found, const Tensor& x, Stream stream);

}  // namespace hai::cuda
