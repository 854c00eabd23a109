#pragma once
// Launcher of the conversion kernel behind framework/device/cast.h.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

enum class FloatFormat { f32, bf16, f16 };

// out[i] = x[i] converted (round to nearest, ties to even) for i < n; the formats differ.
cudaError_t cast(void* out, FloatFormat out_format, const void* x, FloatFormat x_format, int64_t n,
                 cudaStream_t stream);

}  // namespace hai::cuda::kernels
