#pragma once
// Launchers of the squared-norm kernels behind framework/device/grad_norm.h. Squares and sums run in double with
// a fixed grid and fixed reduction trees, so the result is the same from run to run; it differs from the CPU op's
// serial sum by double rounding only.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// Blocks (and partial sums) that sum_of_squares uses for `count` values.
int64_t sum_of_squares_blocks(int64_t count);

// partials [sum_of_squares_blocks(count)] <- the sums of x^2 over each block's share of values [count].
cudaError_t sum_of_squares(double* partials, const float* values, int64_t count, cudaStream_t stream);

// total [1] <- the sum of partials [count], in one block.
cudaError_t sum_partials(double* total, const double* partials, int64_t count, cudaStream_t stream);

}  // namespace hai::cuda::kernels
