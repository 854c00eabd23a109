#pragma once
// Launchers of the column-block kernels behind framework/device/column_copy.h, on row-major matrices
// dst [dst_rows, dst_width] and src [src_rows, src_width].

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

struct ColumnCopyLayout {
  int64_t dst_rows;
  int64_t dst_width;
  int64_t src_width;
  int64_t group;  // G: src rows per dst row (sum) or dst rows per src row (copy)
  int64_t dst_offset;
  int64_t src_offset;
  int64_t width;  // columns moved
};

// dst row r, columns [dst_offset, +width) <- src row r / G, columns [src_offset, +width). Each of dst and src is
// fp32, or bf16 when its flag is set (fp32 -> bf16 rounds to nearest even).
cudaError_t copy_columns(void* dst, bool bf16_dst, const void* src, bool bf16_src, const ColumnCopyLayout& layout,
                         cudaStream_t stream);

// dst row r, columns [dst_offset, +width) <- sum over g < G, in order, of src row r * G + g
cudaError_t sum_columns(float* dst, const float* src, const ColumnCopyLayout& layout, cudaStream_t stream);

}  // namespace hai::cuda::kernels
