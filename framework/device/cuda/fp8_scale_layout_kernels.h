#pragma once
// The launcher of the kernel that rewrites an fp8 scale tensor (row-major, framework/device/fp8_quantize.h) into
// the layout cuBLASLt reads (framework/device/cuda/fp8_gemm.cc); it returns the launch's status.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// out[r * row_stride + c * column_stride] = scales[r * columns + c] for a row-major [rows, columns] fp32 matrix;
// the entries of out no (r, c) maps to are left as they are.
cudaError_t copy_scales_strided(float* out, const float* scales, int64_t rows, int64_t columns, int64_t row_stride,
                                int64_t column_stride, cudaStream_t stream);

}  // namespace hai::cuda::kernels
