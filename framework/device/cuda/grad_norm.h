#pragma once
// CUDA implementation of framework/device/grad_norm.h (operands already checked by the dispatcher). It uses the
// caller's scratch (one double per reduction block, then the total); grad_norm_squared waits for the stream once,
// to return the sum.

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hai::cuda {

int64_t grad_norm_scratch_size(const std::vector<Tensor>& tensors);
double grad_norm_squared(const std::vector<Tensor>& tensors, const Tensor& scratch, Stream stream);
void grad_norm_squared_to(const Tensor& total, const std::vector<Tensor>& tensors, const Tensor& scratch,
                          Stream stream);

}  // namespace hai::cuda
