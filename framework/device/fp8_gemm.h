#pragma once
// FP8 GEMM with DeepSeek-V3 block scales (docs/deepseek-v3.md "FP8 mixed precision recipe"):
//   C = dequant(A) @ dequant(B)^T + beta * C
// with A: [M, K] and B: [N, K] e4m3, both K-major (the contiguous dimension is the one summed over, as FP8 tensor
// cores need), fp32 accumulation and C: [M, N] fp32, or bf16 with beta == 0: the fp32 result rounded once to nearest
// even (an output that only bf16 consumers read is never written in fp32). dequant is
// framework/device/fp8_quantize.h's.
//
// A is always quantised in 1x128 tiles (per row, per 128 of K). B is quantised in 128x128 blocks (a weight) or in
// 1x128 tiles (an activation). The three GEMMs of a linear layer y = x W^T (W [out, in]) are:
//   forward: y   [T, out]  = x [T, in] (1x128)        @ W [out, in] (128x128)^T
//   dgrad:   d_x [T, in]   = d_y [T, out] (1x128)     @ W^T [in, out] (128x128)^T
//   wgrad:   d_W [out, in] = d_y^T [out, T] (1x128)   @ x^T [in, T] (1x128)^T    (tiles along the tokens)
// where the transposed operands come from quantize_128x128_transposed / quantize_128x1_transposed.
//
// The CPU reference dequantises both operands exactly and runs the fp32 GEMM (framework/device/gemm.h), a bf16 C
// rounded from its fp32 result. The CUDA path runs cuBLASLt with per-128 (VEC128_32F) and per-128x128
// (BLK128x128_32F) scale modes, which promotes its partial sums to fp32 at least every 128 products and rounds a
// bf16 D once from them (C and D share their type, as PyTorch's _scaled_mm has them for these modes; a bf16 C is
// only ever written, beta 0, the case PyTorch tests); it needs M, N multiples of 16, and a K that is not a multiple
// of 128 is zero-padded to one (the scales are unchanged). Other shapes take the reference's path on the GPU:
// dequantise, fp32 GEMM.
// cuBLASLt does not read our row-major scale tensors as they are: it wants 1x128 scales transposed
// ([ceil(K / 128), rows], rows fastest) and 128x128 scales with their row stride rounded up to 4 floats. The CUDA
// launcher rewrites both into that layout (a small kernel, stream-ordered scratch) before each GEMM, except 1x128
// scales given column-major (Fp8Matrix::scale_order: the quantiser wrote that layout) and 128x128 scales whose rows
// already are a multiple of 4 floats. Evidence (H200, our scales passed unchanged): error 40 where reading A's
// 1x128 scales transposed matched to 3e-4; 1x128 x 1x128 matched to 1.75e-4 reading both transposed; 3 K blocks per
// row of 128x128 scales (stride 3) gave 3.6e5. framework/device/cuda/fp8_gemm.cc has the details.

#include "framework/device/fp8_quantize.h"
#include "framework/tensor/tensor.h"

namespace hai {

enum class Fp8Scaling {
  tile_1x128,     // scales: [rows, ceil(K / 128)]
  block_128x128,  // scales: [ceil(rows / 128), ceil(K / 128)]
};

// An e4m3 matrix with its block scales (fp32, layouts of framework/device/fp8_quantize.h).
struct Fp8Matrix {
  Tensor values;  // [rows, K] e4m3
  Tensor scales;  // per `scaling` and `scale_order`
  Fp8Scaling scaling = Fp8Scaling::tile_1x128;
  // 1x128 scales only: column_major ([ceil(K / 128), rows]) is the layout cuBLASLt reads, so no copy is made.
  Fp8ScaleOrder scale_order = Fp8ScaleOrder::row_major;
};

// c: [M, N] fp32, or bf16 with beta == 0 <- a: [M, K] (1x128), b: [N, K] (1x128 or 128x128). With beta == 0, C is
// written without being read. C must not overlap the operands.
void fp8_gemm(const Tensor& c, const Fp8Matrix& a, const Fp8Matrix& b, float beta = 0.0f, Stream stream = {});

}  // namespace hai
