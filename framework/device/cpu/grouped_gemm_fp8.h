#pragma once
// CPU reference of framework/device/grouped_gemm_fp8.h (operands already checked by the dispatcher): per expert,
// the dense FP8 GEMM's reference (dequantise both operands exactly, then the fp32 GEMM) over its row block, with
// the offsets read on the host (and checked there).

#include "framework/device/grouped_gemm_fp8.h"

namespace hai::cpu {

void grouped_gemm_fp8(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights,
                      const Tensor& expert_offsets, float beta);

}  // namespace hai::cpu
