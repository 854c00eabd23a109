#pragma once
// CUDA implementation of framework/device/grad_norm.h (operands already checked by the dispatcher). It takes
// (#blocks + 1) doubles of scratch from the stream's memory pool and waits for the stream once, to return the sum.

#include <vector>

#include "framework/tensor/tensor.h"

namespace hai::cuda {

double grad_norm_squared(const std::vector<Tensor>& tensors, Stream stream);

}  // namespace hai::cuda
