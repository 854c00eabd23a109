#pragma once
// RMSNorm over the last dimension: out = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps), one rstd per row.
// All tensors fp32, except that the forward's out may be bf16 (the fp32 result rounded once to nearest even) when
// only a bf16 GEMM reads it. The forward saves rstd for the backward.

#include "framework/tensor/tensor.h"

namespace hai {

// out: [N, D] fp32 or bf16, rstd: [N] <- x: [N, D], weight: [D]
void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight, float eps,
                     Stream stream = {});

struct RmsnormBackwardOptions {
  // d_weight = the sum over the rows + weight_grad_beta * d_weight: 1 adds, 0 writes (d_weight is not read).
  float weight_grad_beta = 1.0f;
};

// d_x: [N, D] (overwritten), d_weight: [D] <- d_out: [N, D], x: [N, D], weight: [D], rstd: [N]
// d_x = rstd * (weight * d_out - x * rstd^2 * mean(weight * d_out * x));
// d_weight = sum_n d_out * x * rstd + options.weight_grad_beta * d_weight.
void rmsnorm_backward(const Tensor& d_x, const Tensor& d_weight, const Tensor& d_out, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const RmsnormBackwardOptions& options = {},
                      Stream stream = {});

}  // namespace hai
