#pragma once
// CUDA implementation of framework/device/column_copy.h (operands already checked by the dispatcher).

#include "framework/device/column_copy.h"

namespace hai::cuda {

void copy_columns(const Tensor& dst, const Tensor& src, ColumnBlock block, Stream stream);
void sum_columns(const Tensor& dst, const Tensor& src, ColumnBlock block, Stream stream);

}  // namespace hai::cuda
