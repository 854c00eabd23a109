#pragma once
// CPU reference of framework/device/rope.h (operands already checked by the dispatcher).

#include "framework/device/rope_table.h"
#include "framework/tensor/tensor.h"

namespace hai::cpu {

void rope_forward(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeTable& table,
                  int64_t column_offset);
void rope_backward(const Tensor& d_x, const Tensor& d_out, const Tensor& positions, const RopeTable& table,
                   int64_t column_offset);

}  // namespace hai::cpu
