#pragma once
// CUDA implementation of framework/device/cast.h (operands already checked by the dispatcher).

#include "framework/tensor/tensor.h"

namespace hai::cuda {

void cast_tensor(const Tensor& out, const Tensor& x, Stream stream);

}  // namespace hai::cuda
