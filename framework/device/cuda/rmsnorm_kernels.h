#pragma once
// Launchers of the RMSNorm kernels behind framework/device/rmsnorm.h: rows x width, row-major fp32.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// out [rows, width] fp32 (or bf16 with bf16_out), rstd [rows] <- x [rows, width], weight [width]; one block per row.
cudaError_t rmsnorm_forward(void* out, bool bf16_out, float* rstd, const float* x, const float* weight, float eps,
                            int64_t rows, int64_t width, cudaStream_t stream);

// Rows per chunk of the weight gradient's first pass, and the chunks of `rows` rows: the backward's partial buffer
// holds [chunks, width] fp32.
inline constexpr int64_t kWeightGradChunkRows = 256;
int64_t rmsnorm_weight_grad_chunks(int64_t rows);

// d_x [rows, width] (overwritten), d_weight [width] (the sum over rows + weight_grad_beta * d_weight, beta 0 or
// 1; 0: not read) <- d_out, x [rows, width], weight, rstd, with partial [rmsnorm_weight_grad_chunks(rows), width]
// as scratch. d_weight sums over rows in a fixed order (deterministic).
cudaError_t rmsnorm_backward(float* d_x, float* d_weight, float* partial, const float* d_out, const float* x,
                             const float* weight, const float* rstd, int64_t rows, int64_t width,
                             float weight_grad_beta, cudaStream_t stream);

}  // namespace hai::cuda::kernels
