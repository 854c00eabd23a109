#pragma once
// CPU reference of framework/device/grouped_gemm_fp8_weight_grad.h (operands already checked by the dispatcher).

#include "framework/device/grouped_gemm_fp8_weight_grad.h"

namespace hai::cpu {

void pad_expert_offsets(const Tensor& padded, const Tensor& expert_offsets);
void quantize_expert_tokens(const Fp8ExpertTokens& tokens, const Tensor& x, const Tensor& expert_offsets,
                            const Tensor& padded, bool pow2_scales);
void grouped_gemm_fp8_weight_grad(const ExpertWeights& grad, const Fp8ExpertTokens& d_y, const Fp8ExpertTokens& x,
                                  const Tensor& padded, float beta);

}  // namespace hai::cpu
