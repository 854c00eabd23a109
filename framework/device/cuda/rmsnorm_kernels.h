#pragma once
// Launchers of the RMSNorm kernels behind framework/device/rmsnorm.h: rows x width, row-major fp32.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// out [rows, width], rstd [rows] <- x [rows, width], weight [width]; one block per row.
cudaError_t rmsnorm_forward(float* out, float* rstd, const float* x, const float* weight, float eps, int64_t rows,
                            int64_t width, cudaStream_t stream);

// d_x [rows, width] (overwritten), d_weight [width] (accumulated) <- d_out, x [rows, width], weight, rstd.
// d_weight sums over rows in a fixed order (deterministic).
cudaError_t rmsnorm_backward(float* d_x, float* d_weight, const float* d_out, const float* x, const float* weight,
                             const float* rstd, int64_t rows, int64_t width, cudaStream_t stream);

}  // namespace hai::cuda::kernels
