#pragma once
// Launchers of the FP8 expert weight gradient's kernels behind framework/device/grouped_gemm_fp8_weight_grad.h:
// grad W_e [N, K] (+)= dequant(d_y) @ dequant(x)^T over expert e's token-padded columns [padded[e], padded[e + 1])
// of d_y [N, P] and x [K, P] (e4m3, one scale per 128-token block and row). The padded offsets stay on the device.
// The host op (grouped_gemm_fp8_weight_grad.cc) picks the kernel.
//   tma (grouped_gemm_fp8_weight_grad_tma.cu): sm_90a on a 9.x device, grouped_gemm_fp8_weight_grad_tma_fits.
//     Each 128-token block's products summed on the tensor cores, promoted to fp32 with d_y's row scale times x's
//     column scale (not bitwise the CPU's).
//   exact (grouped_gemm_fp8_weight_grad_exact.cu): any device, shape and alignment; the CPU's operations in its
//     order. Also what writes the zeros of beta 0 when there are no tokens (P = 0).

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

struct GroupedGemmFp8WeightGradArguments {
  float* gradients;          // expert e's [N, K] fp32 gradient starts at gradients + e * expert_stride
  int64_t expert_stride;
  const uint8_t* d_y;        // [N, P] e4m3
  const float* d_y_scales;   // [P / 128, N]
  const uint8_t* x;          // [K, P] e4m3
  const float* x_scales;     // [P / 128, K]
  const int32_t* padded;     // [E + 1], multiples of 128
  int64_t experts;           // E
  int64_t n;                 // N
  int64_t k;                 // K
  int64_t tokens;            // P
  float beta;                // 0: the gradients written without being read (zeros without tokens); 1: added to
};

// N and K multiples of 128, P a multiple of 128 (and at most INT32_MAX), 16-byte aligned values and gradients,
// x's scales 8-byte aligned, experts' gradients apart by at least N * K floats, a multiple of 4.
bool grouped_gemm_fp8_weight_grad_tma_fits(const GroupedGemmFp8WeightGradArguments& arguments);
// Needs P > 0 (a tensor map has no empty extent).
cudaError_t launch_grouped_gemm_fp8_weight_grad_tma(const GroupedGemmFp8WeightGradArguments& arguments,
                                                    cudaStream_t stream);
cudaError_t launch_grouped_gemm_fp8_weight_grad_exact(const GroupedGemmFp8WeightGradArguments& arguments,
                                                      cudaStream_t stream);

}  // namespace hai::cuda::kernels
