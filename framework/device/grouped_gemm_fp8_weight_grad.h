#pragma once
// The routed experts' weight gradient in FP8 (DeepSeek-V3's recipe, docs/design/fp8-experts.md):
//   grad W_e [N, K] (+)= d_y_e^T [N, rows of e] @ x_e [rows of e, K]
// reduces over expert e's tokens, so both operands are quantised with one scale per 128 tokens of one column (the
// recipe's 128x1 tiles) and stored transposed, tokens contiguous: FP8 tensor cores take only operands contiguous
// along the reduction. A 128-token tile must not mix two experts, so every expert's tokens start at a multiple of
// 128 in these operands: expert e's rows [offsets[e], offsets[e + 1]) of the sorted rows become columns
// [padded[e], padded[e] + rows of e) of the token-padded operand, padded[e + 1] = padded[e] + rows of e rounded up
// to 128, and the columns in between are zeros (which add nothing to a product and leave every amax unchanged).
//
// Layout (Fp8ExpertTokens) of a sorted [R, C] matrix x, P = padded_expert_rows(R, E) columns (any expert counts fit):
//   values [C, P] e4m3: values[c, padded[e] + i] = e4m3(x[offsets[e] + i, c] / scale), zeros elsewhere;
//   scales [P / 128, C] fp32: scale of 128-token block b of column c (fp8_quantize.h's rule on the block's amax),
//     block-major so that one block's scales of consecutive columns are contiguous (what the GEMM's promotion reads);
//     blocks of only zeros (past padded[E]) get the rule's scale of amax 0.
// This is exactly quantize_128x1 of the token-padded matrix x_p [P, C] (x's rows moved to the padded positions,
// zeros elsewhere) with the values written transposed: when every expert's rows start at a multiple of 128 it is
// quantize_128x1_transposed of x itself, with the scales transposed.
//
// Numerics of the GEMM: the CPU reference dequantises both operands (one fp32 multiply per element) and runs the fp32
// GEMM per expert over its padded columns in order, like grouped_gemm_fp8 (grouped_gemm_fp8.h). The CUDA op runs, on
// a 9.x device of an sm_90a build with N and K multiples of 128, a TMA/wgmma kernel that sums each 128-token block of
// exact e4m3 products on the tensor cores and adds block sum * d_y scale(row, block) * x scale(column, block) to fp32
// accumulators (DeepSeek's promotion; within a stated bound of the CPU's, not bitwise); otherwise a SIMT kernel with
// the CPU's operations in the CPU's order, bit for bit. The offsets are never read on the host.

#include "framework/device/grouped_gemm.h"
#include "framework/tensor/tensor.h"

namespace hai {

// A sorted matrix's token-padded, transposed FP8 copy (layout above). Views; see Fp8ExpertTokenBuffers for owners.
struct Fp8ExpertTokens {
  Tensor values;  // [C, P] e4m3
  Tensor scales;  // [P / 128, C] fp32
};

// P: the columns of a token-padded operand of R sorted rows over E experts, enough for any split of the rows
// (sum over e of rows_e rounded up to 128 <= R + 127 E), a multiple of 128.
int64_t padded_expert_rows(int64_t rows, int64_t experts);

// padded: [E + 1] i32 <- expert_offsets: [E + 1] i32 (non-decreasing from 0), on one device: padded[0] = 0,
// padded[e + 1] = padded[e] + (offsets[e + 1] - offsets[e]) rounded up to a multiple of 128.
void pad_expert_offsets(const Tensor& padded, const Tensor& expert_offsets, Stream stream = {});

// tokens <- x: [R, C] fp32, or bf16 (widened exactly first), sorted by expert as expert_offsets ([E + 1] i32)
// says, padded: pad_expert_offsets(expert_offsets); tokens.values [C, P] and tokens.scales [P / 128, C] with
// P = padded_expert_rows(R, E) or more (a multiple of 128). pow2_scales: precision.fp8.pow2_scales.
void quantize_expert_tokens(const Fp8ExpertTokens& tokens, const Tensor& x, const Tensor& expert_offsets,
                            const Tensor& padded, bool pow2_scales = false, Stream stream = {});

// quantize_1x128(q, scales, x) and quantize_expert_tokens(tokens, x, expert_offsets, padded), bit for bit, in one
// pass over a bf16 x on the GPU (the routed experts' backward quantises its output gradients both ways: rows for the
// input gradient, tokens for the weight gradient). q: [R, C] e4m3, scales: [R, ceil(C / 128)] fp32, every row of x
// (those past offsets[E] too); tokens and the rest as quantize_expert_tokens.
void quantize_rows_and_expert_tokens(const Tensor& q, const Tensor& scales, const Fp8ExpertTokens& tokens,
                                     const Tensor& x, const Tensor& expert_offsets, const Tensor& padded,
                                     bool pow2_scales = false, Stream stream = {});

// grad: E x [N, K] fp32 (+)= for every expert e: dequant(d_y.values[:, padded[e]:padded[e+1]]) @
// dequant(x.values[:, padded[e]:padded[e+1]])^T, d_y: [N, P] and x: [K, P] token-padded (quantize_expert_tokens of
// the sorted [R, N] output gradient and [R, K] input), padded: [E + 1] i32. beta 0 writes every expert's gradient
// (zeros for an expert without tokens) without reading it; beta 1 adds to it.
void grouped_gemm_fp8_weight_grad(const ExpertWeights& grad, const Fp8ExpertTokens& d_y, const Fp8ExpertTokens& x,
                                  const Tensor& padded, float beta = 0.0f, Stream stream = {});

}  // namespace hai
