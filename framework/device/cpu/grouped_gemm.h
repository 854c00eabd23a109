#pragma once
// CPU reference of framework/device/grouped_gemm.h (operands already checked by the dispatcher): one gemm per
// expert over its row block, with the offsets read on the host (and checked there).

#include "framework/device/grouped_gemm.h"

namespace hai::cpu {

// Throws unless offsets[0] == 0, the offsets never decrease and offsets[E] <= rows (grouped_gemm_fp8's too).
void check_offsets_values(const Tensor& expert_offsets, int64_t rows);

void grouped_gemm(const Tensor& y, const Tensor& x, const ExpertWeights& weights, const Tensor& expert_offsets,
                  const GroupedGemmOptions& options);
void grouped_gemm_weight_grad(const ExpertWeights& gradients, const Tensor& d_y, const Tensor& x,
                              const Tensor& expert_offsets, float beta);

}  // namespace hai::cpu
