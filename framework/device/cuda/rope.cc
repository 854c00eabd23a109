#include "framework/device/cuda/rope.h"

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/rope_kernels.h"

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
