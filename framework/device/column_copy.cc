#include "framework/device/column_copy.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/column_copy.cu.
namespace hai::cuda {
namespace {

// many: the operand with G rows per row of `few`.
kernels::ColumnCopyLayout layout_of(const Tensor& dst, const Tensor& src, ColumnBlock block, const Tensor& many,
                                    const Tensor& few) {
  return {.dst_rows = dst.size(0) * cpu::rows_per_token(dst),
          .dst_width = dst.size(-1),
          .src_width = src.size(-1),
          .group = cpu::rows_per_token(many) / cpu::rows_per_token(few),
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
#endif

namespace hai {
namespace {

// many: the tensor with G rows per row of `few` (dst of copy_columns, src of sum_columns).
void check_operands(const Tensor& dst, const Tensor& src, ColumnBlock block, const Tensor& many, const Tensor& few,
                    bool bf16_allowed, const char* op) {
  HAI_CHECK(dst.rank() >= 2 && src.rank() >= 2, "{}: operands must be [T, ..., W], got {} and {}", op, dst.str(),
            src.str());
  HAI_CHECK(dst.size(0) == src.size(0), "{}: {} and {} have different token counts", op, dst.str(), src.str());
  for (const Tensor* operand : {&dst, &src}) {
    HAI_CHECK(operand->dtype() == DType::f32 || (bf16_allowed && operand->dtype() == DType::bf16),
              "{}: operands must be fp32{}, got {}", op, bf16_allowed ? " or bf16" : "", operand->str());
  }
  check_same_device(dst, src, op);
  HAI_CHECK(block.width >= 0 && block.dst_offset >= 0 && block.dst_offset + block.width <= dst.size(-1),
            "{}: destination columns [{}, {}) do not fit in width {}", op, block.dst_offset,
            block.dst_offset + block.width, dst.size(-1));
  HAI_CHECK(block.src_offset >= 0 && block.src_offset + block.width <= src.size(-1),
            "{}: source columns [{}, {}) do not fit in width {}", op, block.src_offset, block.src_offset + block.width,
            src.size(-1));
  HAI_CHECK(cpu::rows_per_token(few) > 0 && cpu::rows_per_token(many) % cpu::rows_per_token(few) == 0,
            "{}: the rows of {} are not a whole number per row of {}", op, many.str(), few.str());
}

}  // namespace

void copy_columns(const Tensor& dst, const Tensor& src, ColumnBlock block, [[maybe_unused]] Stream stream) {
  check_operands(dst, src, block, dst, src, /*bf16_allowed=*/true, "copy_columns");
  if (dst.device().is_cpu()) return cpu::copy_columns(dst, src, block);
#ifdef HAI_WITH_CUDA
  return cuda::copy_columns(dst, src, block, stream);
#else
  throw_no_backend("copy_columns", dst.device());
#endif
}

void sum_columns(const Tensor& dst, const Tensor& src, ColumnBlock block, [[maybe_unused]] Stream stream) {
  check_operands(dst, src, block, src, dst, /*bf16_allowed=*/false, "sum_columns");
  if (dst.device().is_cpu()) return cpu::sum_columns(dst, src, block);
#ifdef HAI_WITH_CUDA
  return cuda::sum_columns(dst, src, block, stream);
#else
  throw_no_backend("sum_columns", dst.device());
#endif
}

}  // namespace hai
