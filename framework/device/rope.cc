#include "framework/device/rope.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"
#include "framework/device/index_check.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/rope.cu.
namespace hai::cuda {
namespace {

// out, x: [T, ..., W], positions: [T], table: [P, R/2]
void rotate(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeTable& table, int64_t column_offset,
            float sin_sign, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  int64_t tokens = x.size(0);
  int64_t width = x.size(-1);
  kernels::RopeLayout layout{.tokens = tokens,
                             .heads = tokens > 0 && width > 0 ? x.numel() / (tokens * width) : 0,
                             .width = width,
                             .column_offset = column_offset,
                             .pairs = table.cos.size(1),
                             .table_positions = table.cos.size(0)};
  if (out.dtype() == DType::bf16) {
    check_launch(kernels::rope_rotate_to_bf16(static_cast<uint16_t*>(out.raw()), x.data<float>(),
                                              positions.data<int32_t>(), table.cos.data<float>(),
                                              table.sin.data<float>(), layout, sin_sign, cuda_stream),
                 "rope");
    return;
  }
  check_launch(kernels::rope_rotate(out.data<float>(), x.data<float>(), positions.data<int32_t>(),
                                    table.cos.data<float>(), table.sin.data<float>(), layout, sin_sign, cuda_stream),
               "rope");
}

}  // namespace

void rope_forward(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeTable& table,
                  int64_t column_offset, Stream stream) {
  rotate(out, x, positions, table, column_offset, 1.0f, stream);
}

void rope_backward(const Tensor& d_x, const Tensor& d_out, const Tensor& positions, const RopeTable& table,
                   int64_t column_offset, Stream stream) {
  rotate(d_x, d_out, positions, table, column_offset, -1.0f, stream);
}

}  // namespace hai::cuda
#endif

namespace hai {
namespace {

// out, x: [T, ..., W], positions: [T], table: [P, R/2]
void check_operands(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeTable& table,
                    int64_t column_offset) {
  HAI_CHECK(x.rank() >= 2, "rope input must be [T, ..., W], got {}", x.str());
  check_shape(out, x.shape(), "rope output");
  check_dtype(x, DType::f32, "rope input");
  HAI_CHECK(out.dtype() == DType::f32 || (out.dtype() == DType::bf16 && out.raw() != x.raw()),
            "rope output must be fp32, or bf16 apart from its input, got {}", out.str());
  HAI_CHECK(table.cos.rank() == 2, "rope table must be [P, R/2], got {}", table.cos.str());
  check_shape(table.sin, table.cos.shape(), "rope sin table");
  check_dtype(table.cos, DType::f32, "rope cos table");
  check_dtype(table.sin, DType::f32, "rope sin table");
  int64_t rope_width = 2 * table.cos.size(1);
  HAI_CHECK(column_offset >= 0 && column_offset + rope_width <= x.size(-1),
            "rope columns [{}, {}) do not fit in a head vector of width {}", column_offset, column_offset + rope_width,
            x.size(-1));
  check_shape(positions, Shape{x.size(0)}, "rope positions");
  for (const Tensor* tensor : {&out, &positions, &table.cos, &table.sin}) check_same_device(*tensor, x, "rope");
  check_indices_in_range(positions, table.cos.size(0), "rope position");
}

}  // namespace

void rope_forward(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeTable& table,
                  int64_t column_offset, [[maybe_unused]] Stream stream) {
  check_operands(out, x, positions, table, column_offset);
  if (x.device().is_cpu()) return cpu::rope_forward(out, x, positions, table, column_offset);
#ifdef HAI_WITH_CUDA
  return cuda::rope_forward(out, x, positions, table, column_offset, stream);
#else
  throw_no_backend("rope_forward", x.device());
#endif
}

void rope_backward(const Tensor& d_x, const Tensor& d_out, const Tensor& positions, const RopeTable& table,
                   int64_t column_offset, [[maybe_unused]] Stream stream) {
  check_operands(d_x, d_out, positions, table, column_offset);
  if (d_out.device().is_cpu()) return cpu::rope_backward(d_x, d_out, positions, table, column_offset);
#ifdef HAI_WITH_CUDA
  return cuda::rope_backward(d_x, d_out, positions, table, column_offset, stream);
#else
  throw_no_backend("rope_backward", d_out.device());
#endif
}

}  // namespace hai
