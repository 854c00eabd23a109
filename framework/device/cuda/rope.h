#pragma once
// CUDA implementation of framework/device/rope.h (operands already checked by the dispatcher; positions are not
// range-checked, see rope_kernels.h).

#include "framework/device/rope.h"

namespace hai::cuda {

void rope_forward(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeTable& table,
                  int64_t column_offset, Stream stream);
void rope_backward(const Tensor& d_x, const Tensor& d_out, const Tensor& positions, const RopeTable& table,
                   int64_t column_offset, Stream stream);

}  // namespace hai::cuda
