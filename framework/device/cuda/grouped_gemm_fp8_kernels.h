#pragma once
// Launchers of the FP8 grouped GEMM kernels behind framework/device/grouped_gemm_fp8.h. E experts, R rows sorted
// by expert (expert e owns rows [offsets[e], offsets[e + 1]) of a device-resident offsets array, never read on the
// host), N output features, K the reduction. The host op (grouped_gemm_fp8.cc) picks the kernel.
//   wgmma (grouped_gemm_fp8_wgmma.cu): sm_90a on a 9.x device; needs K > 0 a multiple of 16, N even, x and the
//     weights 16-byte aligned with a weight stride of a multiple of 16, y 8-byte aligned. 128-deep stages summed on
//     the tensor cores, promoted to fp32 with the scales (not bitwise the CPU's).
//   exact (grouped_gemm_fp8_exact.cu): any device, shape and alignment; the CPU's operations in its order.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

struct GroupedGemmFp8Arguments {
  void* y;                     // [R, N] fp32, or bf16 (rounded to nearest even; beta 0) with bf16_output
  const uint8_t* x;            // [R, K] e4m3
  const float* x_scales;       // [R, ceil(K / 128)] 1x128 tiles
  const uint8_t* weights;      // expert e's [N, K] e4m3 starts at weights + e * weight_stride
  int64_t weight_stride;
  const float* weight_scales;  // expert e's [ceil(N / 128), ceil(K / 128)] 128x128 blocks at + e * scale_stride
  int64_t scale_stride;
  const int32_t* offsets;      // [E + 1]
  int64_t experts;             // E
  int64_t rows;                // R
  int64_t n;                   // N
  int64_t k;                   // K
  float beta;                  // 0: y written without being read; 1: added to y
  bool bf16_output;
};

// y rows of every expert <- dequant(x rows) @ dequant(W_e)^T (+ y); rows past offsets[E] are not touched.
bool grouped_gemm_fp8_tma_fits(const GroupedGemmFp8Arguments& arguments);
cudaError_t launch_grouped_gemm_fp8_tma(const GroupedGemmFp8Arguments& arguments, cudaStream_t stream);
cudaError_t launch_grouped_gemm_fp8_wgmma(const GroupedGemmFp8Arguments& arguments, cudaStream_t stream);
cudaError_t launch_grouped_gemm_fp8_exact(const GroupedGemmFp8Arguments& arguments, cudaStream_t stream);

}  // namespace hai::cuda::kernels
