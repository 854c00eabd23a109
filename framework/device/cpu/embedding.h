#pragma once
// CPU reference of framework/device/embedding.h (operands already checked by the dispatcher).

#include "framework/tensor/tensor.h"

namespace hai::cpu {

void embedding_forward(const Tensor& out, const Tensor& table, const Tensor& ids);
void embedding_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids);

}  // namespace hai::cpu
