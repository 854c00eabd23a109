#pragma once
// The squared L2 norm of a set of fp32 tensors (a rank's gradient buffers), accumulated in double. The global
// gradient norm is sqrt of the sum of this over the ranks that hold disjoint shards; clipping then multiplies the
// gradients by min(1, max_norm / norm) with scale_tensor (elementwise.h).

#include <vector>

#include "framework/tensor/tensor.h"

namespace hai {

// sum over tensors and elements of x^2; 0 for an empty list. Synchronous: the result is a host value.
double grad_norm_squared(const std::vector<Tensor>& tensors, Stream stream = {});

}  // namespace hai
