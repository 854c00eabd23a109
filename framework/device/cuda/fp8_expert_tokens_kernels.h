#pragma once
// Launchers of the kernels behind pad_expert_offsets and quantize_expert_tokens
// (framework/device/grouped_gemm_fp8_weight_grad.h); each returns the launch's status. The expert offsets are read on
// the device only. e4m3 values are raw bytes.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// padded: [experts + 1] <- expert_offsets: [experts + 1] (non-decreasing from 0): padded[0] = 0, padded[e + 1] =
// padded[e] + (offsets[e + 1] - offsets[e]) rounded up to a multiple of 128. One block.
cudaError_t pad_expert_offsets(int32_t* padded, const int32_t* expert_offsets, int64_t experts, cudaStream_t stream);

// The experts' rows of a sorted x: expert e's are rows [offsets[e], offsets[e + 1]) of x and rows [padded[e],
// padded[e] + offsets[e + 1] - offsets[e]) of the token-padded x_p [padded_rows, cols].
struct ExpertRowOffsets {
  const int32_t* offsets;  // [experts + 1]
  const int32_t* padded;   // [experts + 1], pad_expert_offsets of offsets
  int64_t experts;
};

// Where quantize_expert_tokens writes (padded_rows a multiple of 128).
struct Fp8ExpertTokensOut {
  uint8_t* values;  // [cols, padded_rows] e4m3
  float* scales;    // [padded_rows / 128, cols]
  int64_t padded_rows, cols;
};

// Where quantize_rows_and_expert_tokens_bf16 writes x's 1x128 quantisation (quantize_1x128's q and scales).
struct Fp8RowsOut {
  uint8_t* q;     // [rows, cols] e4m3
  float* scales;  // [rows, ceil(cols / 128)]
  int64_t rows;
};

// out <- the 128x1 quantisation of x_p (x's rows moved as `experts` says, zeros elsewhere), values written
// transposed: the bits of quantize_tiles' 128x1 tiles of x_p (fp8_quantize_kernels.h), whose scales are already
// out.scales' layout. x: [rows, cols] fp32; rows past offsets[experts] are not read.
cudaError_t quantize_expert_tokens(const Fp8ExpertTokensOut& out, const float* x, const ExpertRowOffsets& experts,
                                   bool pow2_scales, cudaStream_t stream);
// The same of a bf16 x, each element widened exactly: the bits of widening x to fp32 first.
cudaError_t quantize_expert_tokens_bf16(const Fp8ExpertTokensOut& out, const void* x, const ExpertRowOffsets& experts,
                                        bool pow2_scales, cudaStream_t stream);

// quantize_expert_tokens_bf16 into out and quantize_1x128_bf16 (fp8_quantize_kernels.h) into rows, in one pass over
// x: [rows.rows, out.cols] bf16, every row of it, those past offsets[experts] included (out.padded_rows must be at
// least padded_expert_rows(rows.rows, experts)). out.cols a multiple of 8; x, rows.q and out.values 16-byte aligned.
cudaError_t quantize_rows_and_expert_tokens_bf16(const Fp8RowsOut& rows, const Fp8ExpertTokensOut& out, const void* x,
                                                const ExpertRowOffsets& experts, bool pow2_scales,
                                                cudaStream_t stream);

}  // namespace hai::cuda::kernels
