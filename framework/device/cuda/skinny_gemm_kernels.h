#pragma once
// Launchers of the skinny GEMM kernels behind framework/device/cuda/skinny_gemm.h: C = alpha * op(A) op(B) + beta * C
// on row-major fp32 matrices where one of M, N, K is at most kSkinnyMax (the MoE router's three GEMMs). With
// beta == 0, C is not read. Products are fp32 FMAs; every element of C is summed in an order fixed by the shape
// (deterministic: no atomics, no dependence on the device).

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

inline constexpr int64_t kSkinnyMax = 64;

struct SkinnyGemmArguments {
  float* c;        // [m, n]
  const float* a;  // [m, k] (small N, small K) or [k, m] (small M)
  const float* b;  // [n, k] (small N) or [k, n] (small K, small M)
  int64_t m;
  int64_t n;
  int64_t k;
  float alpha;
  float beta;
};

// c [m, n] = alpha * a [m, k] @ b [n, k]^T + beta * c with n <= kSkinnyMax; a and b 16-byte aligned, k % 4 == 0.
cudaError_t skinny_gemm_small_n(const SkinnyGemmArguments& arguments, cudaStream_t stream);

// c [m, n] = alpha * a [m, k] @ b [k, n] + beta * c with k <= kSkinnyMax; b and c 16-byte aligned, n % 4 == 0.
cudaError_t skinny_gemm_small_k(const SkinnyGemmArguments& arguments, cudaStream_t stream);

// The small-M GEMM sums k in skinny_gemm_small_m_splits(k) consecutive splits, each into its own [m, n] slice of a
// [splits, m, n] fp32 workspace, then adds the slices in order.
int64_t skinny_gemm_small_m_splits(int64_t k);

// c [m, n] = alpha * a [k, m]^T @ b [k, n] + beta * c with m <= kSkinnyMax; b and c 16-byte aligned, n % 4 == 0;
// workspace [skinny_gemm_small_m_splits(k), m, n].
cudaError_t skinny_gemm_small_m(const SkinnyGemmArguments& arguments, float* workspace, cudaStream_t stream);

}  // namespace hai::cuda::kernels
