#pragma once
// Grouped GEMM for the routed experts: one call computes every expert's GEMM over its block of rows, with the
// row blocks given by a device-resident offsets tensor (the routing plan's expert_offsets), so the GPU never
// waits for the host to learn how many tokens each expert received.
//
// Rows are sorted by expert (framework/device/token_permutation.h): expert e owns rows [offsets[e], offsets[e+1]).
// E = experts, R = routed rows (T * K), N = output features, K = input features.
//
// Expert weights stay where the ParameterStore keeps them: E tensors of the same shape placed at a constant
// distance from one another (expert e's gate/up/down projections follow expert e-1's). ExpertWeights describes
// them by expert 0's view and that distance, so no copy into a stacked [E, N, K] tensor is needed.
//
// Dtypes follow gemm.h: x and the weights are fp32, bf16 or fp16 (the same dtype), products accumulate in fp32, the
// output (y, or the weight gradients) is fp32. With beta == 0 the output is written without being read. Rows of
// y that belong to no expert (beyond offsets[E]) are left untouched.
//
// The CPU op checks the offsets' values; the CUDA op never reads them on the host (it trusts them). On CUDA, bf16
// operands with N and K multiples of 8, matrices starting on 16 bytes and an expert stride that is a multiple of 8
// run on the tensor cores; anything else (fp32 and fp16 included) runs a slower SIMT kernel with the same results up to the
// order of the fp32 additions.

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai {

struct ExpertWeights {
  Tensor first;                // [N, K] expert 0's matrix (any dtype the op accepts)
  int64_t expert_stride = 0;   // elements from expert e's first element to expert e+1's
  int64_t experts = 0;         // E

  // Expert e's [N, K] matrix as a plain view.
  Tensor expert(int64_t e) const;
};

struct GroupedGemmOptions {
  bool transpose_weights = true;  // y = x @ W_e^T (forward of nn.Linear layout W [N, K]); false: y = x @ W_e
  float beta = 0.0f;              // y = x @ op(W_e) + beta * y
};

// y: [R, N] fp32 <- x: [R, K], weights: E x [N, K] (or E x [K, N] without transpose_weights),
// expert_offsets: [E + 1] i32 on x's device, non-decreasing, offsets[0] == 0, offsets[E] <= R. y may also be bf16
// when beta is 0: the fp32 sums rounded to nearest even (so the next op reads half the bytes). Rows from
// offsets[E] on are left untouched.
void grouped_gemm(const Tensor& y, const Tensor& x, const ExpertWeights& weights, const Tensor& expert_offsets,
                  const GroupedGemmOptions& options = {}, Stream stream = {});

// Weight gradients: grad W_e: [N, K] fp32 = d_y[rows of e]^T @ x[rows of e] + beta * grad W_e for every expert e.
// beta is 1 (add) or 0 (write: the gradients are not read, and an expert with no rows gets zeros). d_y: [R, N],
// x: [R, K] (same dtype), gradients: E x [N, K] fp32.
void grouped_gemm_weight_grad(const ExpertWeights& gradients, const Tensor& d_y, const Tensor& x,
                              const Tensor& expert_offsets, float beta = 1.0f, Stream stream = {});

}  // namespace hai
