#pragma once
// In-place elementwise helpers on fp32 tensors of any shape: scaling (gradient clipping, loss-scale removal),
// y += alpha * x (residual branches' gradients, accumulating partial results), filling with a constant, and
// adding a scaled sum into a one-element total (losses kept on the device until the trainer reads them).

#include "framework/tensor/tensor.h"

namespace hai {

// tensor: [any] *= factor
void scale_tensor(const Tensor& tensor, float factor, Stream stream = {});

// y: [any] += alpha * x: [same shape as y]
void add_scaled(const Tensor& y, const Tensor& x, float alpha = 1.0f, Stream stream = {});

// tensor: [any] = value
void fill_tensor(const Tensor& tensor, float value, Stream stream = {});

// total: [1] += scale * sum(x), x: [any]. The sum is accumulated in double in a fixed order (on the CPU in index
// order; on CUDA by one block in a fixed tree), then scaled and rounded once to fp32 before the addition.
void accumulate_sum(const Tensor& total, const Tensor& x, float scale = 1.0f, Stream stream = {});

}  // namespace hai
