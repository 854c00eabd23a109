#pragma once
// CUDA implementation of framework/device/grouped_gemm_fp8_weight_grad.h (operands already checked by the
// dispatcher). The expert offsets stay on the device.

#include "framework/device/grouped_gemm_fp8_weight_grad.h"

namespace hai::cuda {

void pad_expert_offsets(const Tensor& padded, const Tensor& expert_offsets, Stream stream);

// Bit for bit the CPU reference: the same amax, IEEE division for the scale and for x / scale, e4m3 rounding.
void quantize_expert_tokens(const Fp8ExpertTokens& tokens, const Tensor& x, const Tensor& expert_offsets,
                            const Tensor& padded, bool pow2_scales, Stream stream);

// One kernel for a bf16 x with C a multiple of 8 and x, q and tokens.values 16-byte aligned; otherwise
// quantize_1x128's kernel and quantize_expert_tokens' one after the other.
void quantize_rows_and_expert_tokens(const Tensor& q, const Tensor& scales, const Fp8ExpertTokens& tokens,
                                     const Tensor& x, const Tensor& expert_offsets, const Tensor& padded,
                                     bool pow2_scales, Stream stream);

// Which kernel runs: tma where it fits, else exact (automatic, the op's choice), or one asked for by a test: tma
// throws where it cannot run; exact runs anywhere.
enum class GroupedGemmFp8WeightGradKernel { automatic, tma, exact };

void grouped_gemm_fp8_weight_grad(const ExpertWeights& grad, const Fp8ExpertTokens& d_y, const Fp8ExpertTokens& x,
                                  const Tensor& padded, float beta, Stream stream,
                                  GroupedGemmFp8WeightGradKernel kernel = GroupedGemmFp8WeightGradKernel::automatic);

// Whether the TMA kernel can run these operands on the current device (an sm_90a build on a 9.x device, N and K
// multiples of 128, P a multiple of 128, 16-byte aligned operands).
bool grouped_gemm_fp8_weight_grad_tma_fits(const ExpertWeights& grad, const Fp8ExpertTokens& d_y,
                                           const Fp8ExpertTokens& x);

}  // namespace hai::cuda
