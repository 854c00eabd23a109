#pragma once
// The fp32 GEMMs of framework/device/gemm.h that one small dimension makes skinny (the MoE router's: logits = x W^T,
// its input gradient d_x += d_logits W and its weight gradient dW = d_logits^T x), run by kernels of our own instead
// of cuBLASLt, whose fp32 SIMT kernels are far from the memory bandwidth on them. Operands already checked by the
// dispatcher; results are deterministic and differ from cuBLASLt's in the order of the additions only.

#include <cuda_runtime_api.h>

#include "framework/device/gemm.h"

namespace hai::cuda {

// Whether gemm(c, a, b, options) runs the skinny kernels: A, B and C fp32, and one of
//   small N: C [M, N] = alpha A [M, K] B [N, K]^T + beta C    (transpose_b only)
//   small K: C [M, N] = alpha A [M, K] B [K, N] + beta C      (no transpose)
//   small M: C [M, N] = alpha A [K, M]^T B [K, N] + beta C    (transpose_a only)
// with the small dimension 1 .. 64 and the other two at least 128, where the operands the kernels access a float4
// at a time (small N: A and B; small K and small M: B and C) are 16-byte aligned with rows of a multiple of 4.
bool skinny_gemm_applies(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options);

// C = alpha op(A) op(B) + beta C by the skinny kernels; skinny_gemm_applies must hold.
void skinny_gemm(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options, cudaStream_t stream);

}  // namespace hai::cuda
