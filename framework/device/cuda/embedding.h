#pragma once
// CUDA implementation of framework/device/embedding.h (operands already checked by the dispatcher; ids are not
// range-checked, see embedding_kernels.h).

#include "framework/tensor/tensor.h"

namespace hai::cuda {

void embedding_forward(const Tensor& out, const Tensor& table, const Tensor& ids, Stream stream);
void embedding_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, Stream stream);

}  // namespace hai::cuda
