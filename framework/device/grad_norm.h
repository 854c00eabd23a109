#pragma once
// The squared L2 norm of a set of fp32 tensors (a rank's gradient buffers), accumulated in double. The global
// gradient norm is sqrt of the sum of this over the ranks that hold disjoint shards. An inf or NaN element makes
// the sum inf or NaN (squares of finite fp32 values cannot overflow a double, even summed over 2^60 of them), so
// the norm doubles as the check that every gradient is finite.

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hai {

// The scratch grad_norm_squared needs for these tensors, in 8-byte words: on CUDA one per reduction block and one
// for the total; 0 on the CPU. Depends only on the tensors' device and sizes.
int64_t grad_norm_scratch_size(const std::vector<Tensor>& tensors);

// sum over tensors and elements of x^2; 0 for an empty list. scratch: [>= grad_norm_scratch_size(tensors)] i64 on
// the tensors' device, overwritten. Synchronous: the result is a host value.
double grad_norm_squared(const std::vector<Tensor>& tensors, const Tensor& scratch, Stream stream = {});
// The same sum written to total: [1] i64 on the tensors' device, as a double's bits, without waiting for the device
// (0 for an empty list). The training step keeps its norm on the device this way (grad_clip.h).
void grad_norm_squared_to(const Tensor& total, const std::vector<Tensor>& tensors, const Tensor& scratch,
                          Stream stream = {});
// The same with scratch of its own for this call (tests, one-off uses); a training loop keeps its scratch.
double grad_norm_squared(const std::vector<Tensor>& tensors, Stream stream = {});

}  // namespace hai
