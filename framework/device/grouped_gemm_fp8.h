#pragma once
// FP8 grouped GEMM for the routed experts' forward and input gradient (docs/design/fp8-experts.md): for every
// expert e, y[rows of e] = dequant(x[rows of e]) @ dequant(W_e)^T (+ y with beta 1), both operands e4m3 and K-major,
// with the DeepSeek-V3 block scales of framework/device/fp8_gemm.h: x in 1x128 tiles (a row's 128 columns of K),
// W_e in 128x128 blocks. Rows are sorted by expert as for grouped_gemm (framework/device/grouped_gemm.h): expert e
// owns rows [offsets[e], offsets[e + 1]) of a device-resident offsets tensor.
//   forward:        y   [R, N] = x  [R, K] (1x128) @ W_e   [N, K] (128x128)^T
//   input gradient: d_x [R, K] = d_y [R, N] (1x128) @ W_e^T [K, N] (128x128)^T   (the transposed copies, passed as W)
//
// Numerics: exactly the dense FP8 GEMM's CPU reference (fp8_gemm.h) per expert: every element dequantised by one
// fp32 multiply (e4m3 value * its scale), then the fp32 GEMM, which sums the products a' * b' over k = 0, 1, ...,
// K - 1 in that order (one rounding per product and per add), then y = sum, or sum + y with beta 1, or bf16(sum).
// On one expert the result is fp8_gemm's bit for bit.
//
// The CUDA op never reads the offsets on the host. It runs one of two kernels (framework/device/cuda/
// grouped_gemm_fp8*.cu*): on a 9.x device of an sm_90a build, with K a multiple of 16, N even and 16-byte aligned
// operands, an FP8 wgmma kernel that sums each 128-deep block of exact e4m3 products on the tensor cores and adds
// block sum * x scale * W scale to its fp32 accumulators (DeepSeek's promotion; not bitwise the CPU's: the tensor
// core keeps limited precision inside a block); otherwise a SIMT kernel with the CPU's operations in the CPU's
// order, bit for bit.

#include "framework/device/fp8_gemm.h"
#include "framework/device/grouped_gemm.h"

namespace hai {

// Every expert's e4m3 matrix with its 128x128 block scales, each at a constant stride like ExpertWeights.
struct Fp8ExpertWeights {
  ExpertWeights values;  // E x [N, K] e4m3
  ExpertWeights scales;  // E x [ceil(N / 128), ceil(K / 128)] fp32 (quantize_128x128's layout)
};

// y: [R, N] fp32 <- x: values [R, K] e4m3 with 1x128 scales [R, ceil(K / 128)] (quantize_1x128's layout),
// weights: E x [N, K], expert_offsets: [E + 1] i32 on x's device, non-decreasing, offsets[0] == 0,
// offsets[E] <= R. beta is 0 (y written, never read) or 1 (added to y). y may be bf16 with beta 0: the fp32 sums
// rounded once to nearest even. Rows from offsets[E] on are left untouched.
void grouped_gemm_fp8(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights,
                      const Tensor& expert_offsets, float beta = 0.0f, Stream stream = {});

}  // namespace hai
