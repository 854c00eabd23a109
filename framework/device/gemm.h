#pragma once
// GEMM: C = alpha * op(A) @ op(B) + beta * C on row-major matrices, op = identity or transpose.
// A and B are fp32, bf16 or fp16 (16-bit values are widened exactly to fp32); products accumulate in fp32; C is
// fp32, or bf16 with beta == 0: the fp32 result rounded once to nearest even, so that an output only a bf16 op
// reads is never written in fp32.
//
// op(A) is [M, K]: A is [M, K], or [K, M] with transpose_a. op(B) is [K, N]: B is [K, N], or [N, K] with
// transpose_b. A linear layer y = x W^T with W [out, in] is gemm(y, x, W, {.transpose_b = true}); its input
// gradient is gemm(dx, dy, W) and its weight gradient gemm(dW, dy, x, {.transpose_a = true, .beta = 1}).
// With beta == 0, C is written without being read (it may hold anything, even NaN), as in BLAS. C must not
// overlap A or B.
//
// There is no batched form: the model's per-expert GEMMs are loops over row slices of their operands.

#include "framework/tensor/tensor.h"

namespace hai {

struct GemmOptions {
  bool transpose_a = false;
  bool transpose_b = false;
  float alpha = 1.0f;
  float beta = 0.0f;
};

// c: [M, N] <- a: [M, K] (or [K, M] transposed), b: [K, N] (or [N, K] transposed)
void gemm(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options = {}, Stream stream = {});

}  // namespace hai
