#pragma once
// Launcher of the kernel behind framework/device/all_finite.h; returns the launch's status.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// found[0] = 1 when any of x[0..n) is inf or NaN; untouched otherwise.
cudaError_t flag_non_finite(int32_t* found, const float* x, int64_t n, cudaStream_t stream);

}  // namespace hai::cuda::kernels
