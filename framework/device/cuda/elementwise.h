#pragma once
// CUDA implementation of framework/device/elementwise.h (operands already checked by the dispatcher).

#include "framework/tensor/tensor.h"

namespace hai::cuda {

void scale_tensor(const Tensor& tensor, float factor, Stream stream);
void add_scaled(const Tensor& y, const Tensor& x, float alpha, Stream stream);
void fill_tensor(const Tensor& tensor, float value, Stream stream);
void accumulate_sum(const Tensor& total, const Tensor& x, float scale, Stream stream);

}  // namespace hai::cuda
