#pragma once
// RMSNorm over the last dimension: out = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps), one rstd per row.
// All tensors fp32, except that the forward's out may be bf16 (the fp32 result rounded once to nearest even) when
// only a bf16 GEMM reads it, and that an fp32 result read by fp32 ops and by a bf16 GEMM alike can come with its bf16
// rounding written in the same pass (the bits of casting it afterwards, without the cast's pass). The forward saves
// rstd for the backward.
//
// A pre-norm residual block reads the norm next to a residual add (h = x + attention(...), then norm(h)): the fused
// forms below do the add in the norm's pass, with the fp32 sums of the add they replace (add_scaled with alpha 1,
// elementwise.h), so results are bitwise those of the add and the norm apart.

#include "framework/tensor/tensor.h"

namespace hai {

// out: [N, D] fp32 or bf16, rstd: [N] <- x: [N, D], weight: [D]
void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight, float eps,
                     Stream stream = {});

// sum: [N, D] = a + b (a, b: [N, D]; sum may be a or b), then out: [N, D] fp32 or bf16, rstd: [N] <- the norm of
// sum, as rmsnorm_forward(out, rstd, sum, weight, eps) after the add, in one pass. out_bf16: [N, D] bf16, optional
// beside an fp32 out: out rounded once to nearest even, written in the same pass (the bits of casting out, for a bf16
// GEMM that reads the rows beside an fp32 reader of out).
void add_rmsnorm_forward(const Tensor& sum, const Tensor& out, const Tensor& rstd, const Tensor& a, const Tensor& b,
                         const Tensor& weight, float eps, const Tensor& out_bf16 = {}, Stream stream = {});

struct RmsnormBackwardOptions {
  // d_weight = the sum over the rows + weight_grad_beta * d_weight: 1 adds, 0 writes (d_weight is not read).
  float weight_grad_beta = 1.0f;
  // [N, D], optional: the gradient of a residual path around the norm, added to d_x (d_x = residual_grad + the
  // norm's input gradient, one fp32 add, as add_scaled after the backward). May be d_x itself: d_x accumulates.
  Tensor residual_grad = {};
  // [N, D] bf16, optional: d_x (with residual_grad added) rounded once to nearest even, written in the same pass (the
  // bits of casting d_x afterwards, for a bf16 GEMM that reads the gradient beside its fp32 readers).
  Tensor d_x_bf16 = {};
};

// d_x: [N, D] (overwritten), d_weight: [D] <- d_out: [N, D], x: [N, D], weight: [D], rstd: [N]
// d_x = rstd * (weight * d_out - x * rstd^2 * mean(weight * d_out * x)) (+ options.residual_grad);
// d_weight = sum_n d_out * x * rstd + options.weight_grad_beta * d_weight.
void rmsnorm_backward(const Tensor& d_x, const Tensor& d_weight, const Tensor& d_out, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const RmsnormBackwardOptions& options = {},
                      Stream stream = {});

}  // namespace hai
