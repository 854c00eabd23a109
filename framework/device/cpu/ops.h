#pragma once
// The CPU backend: one reference implementation per public op, grouped by op. Each function does what the
// framework/device/<op>.h of the same name does, on CPU tensors the dispatcher (<op>.cc) has already checked.

#include "framework/device/rmsnorm.h"
#include "framework/tensor/tensor.h"

namespace hai::cpu {

// rmsnorm.h
void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight, float eps);
void add_rmsnorm_forward(const Tensor& sum, const Tensor& out, const Tensor& rstd, const Tensor& a, const Tensor& b,
                         const Tensor& weight, float eps, const Tensor& out_bf16);
void rmsnorm_backward(const Tensor& d_x, const Tensor& d_weight, const Tensor& d_out, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const RmsnormBackwardOptions& options);

}  // namespace hai::cpu
