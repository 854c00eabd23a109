#pragma once
// Global gradient-norm clipping. The caller computes the squared norm of its gradient shards
// (grad_norm_squared, framework/device/grad_norm.h) and, with data parallelism, sums it over the ranks that hold
// disjoint shards before calling this, so every rank scales by the same factor.

#include <vector>

#include "framework/tensor/tensor.h"

namespace hai {

// Returns the pre-clip global norm sqrt(squared_norm). When max_norm > 0 and the norm is finite, scales every
// gradient tensor by min(1, max_norm / (norm + 1e-6)). A non-finite norm leaves the gradients untouched: the
// caller skips the step.
double clip_gradients(const std::vector<Tensor>& grads, double squared_norm, double max_norm, Stream stream = {});

}  // namespace hai
