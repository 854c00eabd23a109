#include "framework/device/cuda/column_copy.h"

#include "framework/device/cuda/column_copy_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {
namespace {

// The product of the middle dims of [T, ..., W]: rows per token.
int64_t rows_per_token(const Tensor& tensor) {
  int64_t rows = 1;
  for (int dim = 1; dim + 1 < tensor.rank(); ++dim) rows *= tensor.size(dim);
  return rows;
}

// many: the operand with G rows per row of `few`.
kernels::ColumnCopyLayout layout_of(const Tensor& dst, const Tensor& src, ColumnBlock block, const Tensor& many,
                                    const Tensor& few) {
  return {.dst_rows = dst.size(0) * rows_per_token(dst),
          .dst_width = dst.size(-1),
          .src_width = src.size(-1),
          .group = rows_per_token(many) / rows_per_token(few),
          .dst_offset = block.dst_offset,
          .src_offset = block.src_offset,
          .width = block.width};
}

}  // namespace

void copy_columns(const Tensor& dst, const Tensor& src, ColumnBlock block, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(dst.device(), stream);
  check_launch(kernels::copy_columns(dst.raw(), dst.dtype() == DType::bf16, src.raw(), src.dtype() == DType::bf16,
                                     layout_of(dst, src, block, dst, src), cuda_stream),
               "copy_columns");
}

void sum_columns(const Tensor& dst, const Tensor& src, ColumnBlock block, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(dst.device(), stream);
  check_launch(kernels::sum_columns(dst.data<float>(), src.data<float>(), layout_of(dst, src, block, src, dst),
                                    cuda_stream),
               "sum_columns");
}

}  // namespace hai::cuda
