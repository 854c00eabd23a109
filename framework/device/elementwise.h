#pragma once
// In-place elementwise helpers on fp32 tensors of any shape: scaling (gradient clipping, loss-scale removal) and
// y += alpha * x (residual branches' gradients, accumulating partial results).

#include "framework/tensor/tensor.h"

namespace hai {

// tensor: [any] *= factor
void scale_tensor(const Tensor& tensor, float factor, Stream stream = {});

// y: [any] += alpha * x: [same shape as y]
void add_scaled(const Tensor& y, const Tensor& x, float alpha = 1.0f, Stream stream = {});

}  // namespace hai
