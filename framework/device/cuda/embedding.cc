#include "framework/device/cuda/embedding.h"

#include "framework/device/cuda/embedding_kernels.h"
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/scratch.h"

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
