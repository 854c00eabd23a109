#pragma once
// Launchers of the elementwise kernels behind framework/device/elementwise.h; each returns the launch's status.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// values[i] *= factor for i < n
cudaError_t scale(float* values, float factor, int64_t n, cudaStream_t stream);

// y[i] += alpha * x[i] for i < n, rounded like the CPU op (a product, then a sum; no fused multiply-add)
cudaError_t add_scaled(float* y, const float* x, float alpha, int64_t n, cudaStream_t stream);

// values[i] = value for i < n
cudaError_t fill(float* values, float value, int64_t n, cudaStream_t stream);

// total[0] += (float)(scale * sum of x[0..n) in double), by one block in a fixed order (deterministic)
cudaError_t accumulate_sum(float* total, const float* x, float scale, int64_t n, cudaStream_t stream);

}  // namespace hai::cuda::kernels
