#pragma once
// CUDA implementation of framework/device/rmsnorm.h (operands already checked by the dispatcher).

#include "framework/device/rmsnorm.h"
#include "framework/tensor/tensor.h"

namespace hai::cuda {

void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight, float eps,
                     Stream stream);
void add_rmsnorm_forward(const Tensor& sum, const Tensor& out, const Tensor& rstd, const Tensor& a, const Tensor& b,
                         const Tensor& weight, float eps, const Tensor& out_bf16, Stream stream);
void rmsnorm_backward(const Tensor& d_x, const Tensor& d_weight, const Tensor& d_out, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const RmsnormBackwardOptions& options, Stream stream);

}  // namespace hai::cuda
