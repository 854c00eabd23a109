#pragma once
// Launchers of the grouped expert GEMM kernels behind framework/device/grouped_gemm.h. E experts, R rows sorted by
// expert (expert e owns rows [offsets[e], offsets[e + 1]) of a device-resident offsets array, never read on the
// host), N output features, K input features. Inputs are fp32, bf16 or fp16 (input_type); outputs fp32 (the
// forward may also write bf16).
//
// bf16 operands with N and K multiples of 8 and 16-byte aligned matrices run on the tensor cores with fp32
// accumulation (wgmma on a 9.x device when built for sm_90a, mma.sync m16n8k16 otherwise; on wgmma, the forward and
// input gradient with N % 256 == 0 and K % 64 == 0, and the weight gradient with N % 128 == 0 and K % 256 == 0,
// take the warp-specialised TMA loop); anything else (fp16 included) runs a SIMT kernel with fp32 FMAs.
// docs/design/grouped-gemm.md.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

enum class GroupedGemmInput { f32, bf16, f16 };

struct GroupedGemmArguments {
  void* y;                   // [R, N] fp32, or bf16 (rounded to nearest even; beta 0) with bf16_output
  const void* x;             // [R, K]
  const void* weights;       // expert e's [N, K] (or [K, N]) matrix starts at weights + e * expert_stride elements
  int64_t expert_stride;
  const int32_t* offsets;    // [E + 1]
  int64_t experts;           // E
  int64_t rows;              // R
  int64_t n;                 // N
  int64_t k;                 // K
  GroupedGemmInput input_type;
  bool transpose_weights;    // y = x @ W_e^T with W_e [N, K]; false: y = x @ W_e with W_e [K, N]
  float beta;                // y = x @ op(W_e) + beta * y (beta == 0: y is not read)
  bool bf16_output;
};

struct GroupedWeightGradArguments {
  float* gradients;          // expert e's [N, K] fp32 gradient starts at gradients + e * expert_stride elements
  int64_t expert_stride;
  const void* d_y;           // [R, N]
  const void* x;             // [R, K]
  const int32_t* offsets;    // [E + 1]
  int64_t experts;           // E
  int64_t rows;              // R
  int64_t n;                 // N
  int64_t k;                 // K
  GroupedGemmInput input_type;
  float beta;                // 1: grad W_e += the product; 0: grad W_e = the product (not read), zeros without rows
};

// y rows of every expert <- x rows @ op(W_e) (+ beta * y); rows past offsets[E] are not touched.
cudaError_t grouped_gemm(const GroupedGemmArguments& arguments, cudaStream_t stream);

// grad W_e = d_y[rows of e]^T @ x[rows of e] + beta * grad W_e for every expert (beta 0 or 1).
cudaError_t grouped_gemm_weight_grad(const GroupedWeightGradArguments& arguments, cudaStream_t stream);

}  // namespace hai::cuda::kernels
