#pragma once
// CPU reference of framework/device/column_copy.h (operands already checked by the dispatcher).

#include "framework/device/column_copy.h"
#include "framework/tensor/tensor.h"

namespace hai::cpu {

void copy_columns(const Tensor& dst, const Tensor& src, ColumnBlock block);
void sum_columns(const Tensor& dst, const Tensor& src, ColumnBlock block);

}  // namespace hai::cpu
