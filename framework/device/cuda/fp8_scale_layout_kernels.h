#pragma once
// The launcher of the kernel that rewrites fp8 scale tensors (row-major, framework/device/fp8_quantize.h) into the
// layout cuBLASLt reads (framework/device/cuda/fp8_gemm.cc); it returns the launch's status.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// A row-major [rows, columns] fp32 scale tensor and where its entries go: out[r * row_stride + c * column_stride].
struct StridedScaleCopy {
  float* out;
  const float* scales;
  int64_t rows, columns, row_stride, column_stride;
};

// Both copies (a GEMM's two operands' scales) in one launch; the entries of out no (r, c) maps to are left as they
// are.
cudaError_t copy_scales_strided(const StridedScaleCopy& first, const StridedScaleCopy& second, cudaStream_t stream);

}  // namespace hai::cuda::kernels
