#pragma once
// CPU reference of framework/device/elementwise.h (operands already checked by the dispatcher).

#include "framework/tensor/tensor.h"

namespace hai::cpu {

void scale_tensor(const Tensor& tensor, float factor);
void add_scaled(const Tensor& y, const Tensor& x, float alpha);
void fill_tensor(const Tensor& tensor, float value);
void accumulate_sum(const Tensor& total, const Tensor& x, float scale);

}  // namespace hai::cpu
