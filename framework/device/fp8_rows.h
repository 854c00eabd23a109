#pragma once
// Rows quantised in FP8 with the buffers they own: the activations and output gradients of the FP8 GEMMs
// (fp8_gemm.h, grouped_gemm_fp8.h) in 1x128 tiles, as quantize_1x128 makes them (fp8_quantize.h). Not an op: it
// allocates its result, for the layers and the expert exchange that quantise such rows.

#include "framework/device/fp8_gemm.h"
#include "framework/device/grouped_gemm_fp8_weight_grad.h"
#include "framework/tensor/tensor.h"

namespace hai {

struct Fp8Rows {
  OwnedTensor values;  // [R, K] e4m3
  OwnedTensor scales;  // [R, ceil(K / 128)] fp32, one per row and 128 columns

  Fp8Rows() = default;
  Fp8Rows(int64_t rows, int64_t columns, Device device);
  Fp8Matrix matrix() const { return {values, scales, Fp8Scaling::tile_1x128}; }
};

// rows: [R, K] fp32, or bf16 (widened exactly first) -> its 1x128 quantisation. pow2_scales:
// precision.fp8.pow2_scales.
Fp8Rows quantize_rows(const Tensor& rows, bool pow2_scales, Stream stream = {});

// rows -> [R, K] fp32: dequantize_1x128 of them (fp8_quantize.h: e4m3 value times its scale, one fp32 multiply), as
// SwiGLU's backward reads the gate and up cached in FP8.
OwnedTensor dequantize_rows(const Fp8Rows& rows, Stream stream = {});

// Rows sorted by expert, quantised token-padded and transposed for the FP8 expert weight gradient
// (grouped_gemm_fp8_weight_grad.h), with the buffers they own.
struct Fp8ExpertTokenBuffers {
  OwnedTensor values;  // [C, P] e4m3
  OwnedTensor scales;  // [P / 128, C] fp32
  Fp8ExpertTokens tokens() const { return {values, scales}; }
};

// sorted: [R, C] fp32 or bf16 (expert e's rows [offsets[e], offsets[e + 1]) of expert_offsets [E + 1] i32), padded:
// pad_expert_offsets(expert_offsets) -> quantize_expert_tokens of it with P = padded_expert_rows(R, E).
Fp8ExpertTokenBuffers quantize_tokens_by_expert(const Tensor& sorted, const Tensor& expert_offsets,
                                                const Tensor& padded, bool pow2_scales, Stream stream = {});

// An output gradient of the routed experts in both layouts their backward reads: 1x128 rows for the input gradient,
// token-padded columns for the weight gradient.
struct Fp8RowsAndExpertTokens {
  Fp8Rows rows;                  // [R, C] 1x128
  Fp8ExpertTokenBuffers tokens;  // [C, P]
};

// quantize_rows(sorted) and quantize_tokens_by_expert(sorted, expert_offsets, padded), the same bits, from one read
// of sorted on the GPU (quantize_rows_and_expert_tokens).
Fp8RowsAndExpertTokens quantize_rows_and_tokens_by_expert(const Tensor& sorted, const Tensor& expert_offsets,
                                                          const Tensor& padded, bool pow2_scales, Stream stream = {});

}  // namespace hai
