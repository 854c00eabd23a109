#include "framework/device/embedding.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"
#include "framework/device/index_check.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/scratch.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/embedding.cu.
namespace hai::cuda {

void embedding_forward(const Tensor& out, const Tensor& table, const Tensor& ids, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(out.device(), stream);
  check_launch(kernels::embedding_forward(out.data<float>(), table.data<float>(), ids.data<int32_t>(), ids.size(0),
                                          table.size(0), table.size(1), cuda_stream),
               "embedding_forward");
}

void embedding_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, Stream stream) {
  embedding_shard_backward(d_table, d_out, ids, 0, stream);  // the whole table: the shard of every id
}

void embedding_shard_forward(const Tensor& out, const Tensor& table, const Tensor& ids, int64_t first,
                             Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(out.device(), stream);
  check_launch(kernels::embedding_shard_forward(out.data<float>(), table.data<float>(), ids.data<int32_t>(),
                                                ids.size(0), first, table.size(0), table.size(1), cuda_stream),
               "embedding_shard_forward");
}

void embedding_shard_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, int64_t first,
                              Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(d_table.device(), stream);
  int64_t tokens = ids.size(0);
  if (tokens == 0) return;
  int64_t workspace_bytes = 0;
  check_launch(kernels::embedding_backward_workspace_bytes(tokens, &workspace_bytes), "embedding_backward");
  Scratch workspace(workspace_bytes, cuda_stream);
  check_launch(kernels::embedding_shard_backward(d_table.data<float>(), d_out.data<float>(), ids.data<int32_t>(),
                                                 tokens, first, d_table.size(0), d_table.size(1), workspace.data(),
                                                 cuda_stream),
               "embedding_backward");
}

}  // namespace hai::cuda
#endif

namespace hai {
namespace {

// rows: [T, D], table: [V, D], ids: [T]
void check_operands(const Tensor& rows, const Tensor& table, const Tensor& ids) {
  HAI_CHECK(table.rank() == 2, "embedding table must be [V, D], got {}", table.str());
  HAI_CHECK(ids.rank() == 1, "embedding ids must be [T], got {}", ids.str());
  check_shape(rows, Shape{ids.size(0), table.size(1)}, "embedding rows");
  check_dtype(table, DType::f32, "embedding table");
  check_dtype(rows, DType::f32, "embedding rows");
  check_same_device(rows, table, "embedding");
  check_same_device(ids, table, "embedding");
  check_indices_in_range(ids, table.size(0), "embedding id");
}

}  // namespace

void embedding_forward(const Tensor& out, const Tensor& table, const Tensor& ids, [[maybe_unused]] Stream stream) {
  check_operands(out, table, ids);
  if (out.device().is_cpu()) return cpu::embedding_forward(out, table, ids);
#ifdef HAI_WITH_CUDA
  return cuda::embedding_forward(out, table, ids, stream);
#else
  throw_no_backend("embedding_forward", out.device());
#endif
}

void embedding_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, [[maybe_unused]] Stream stream) {
  check_operands(d_out, d_table, ids);
  if (d_table.device().is_cpu()) return cpu::embedding_backward(d_table, d_out, ids);
#ifdef HAI_WITH_CUDA
  return cuda::embedding_backward(d_table, d_out, ids, stream);
#else
  throw_no_backend("embedding_backward", d_table.device());
#endif
}

}  // namespace hai
