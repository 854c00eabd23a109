#include "framework/device/cuda/vocab_shard.h"

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/vocab_shard_kernels.h"

namespace hai::cuda {

void vocab_shard_row_max(const Tensor& row_max, const Tensor& logits, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(logits.device(), stream);
  check_launch(kernels::vocab_shard_row_max(row_max.data<float>(), logits.data<float>(), logits.size(0),
                                            logits.size(1), cuda_stream),
               "vocab_shard_row_max");
}

void vocab_shard_softmax_stats(const Tensor& stats, const Tensor& logits, const Tensor& row_max,
                               const Tensor& targets, int64_t first, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(logits.device(), stream);
  check_launch(kernels::vocab_shard_softmax_stats(stats.data<float>(), logits.data<float>(), row_max.data<float>(),
                                                  targets.data<int32_t>(), first, logits.size(0), logits.size(1),
                                                  cuda_stream),
               "vocab_shard_softmax_stats");
}

void vocab_shard_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                               const Tensor& row_max, const Tensor& stats, const Tensor& targets, int64_t first,
                               float scale, int32_t ignore_index, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(logits.device(), stream);
  bool gradient = d_logits.defined();
  check_launch(kernels::vocab_shard_loss_and_grad(
                   losses.data<float>(), gradient ? d_logits.raw() : nullptr,
                   gradient && d_logits.dtype() == DType::bf16, logits.data<float>(), row_max.data<float>(),
                   stats.data<float>(), targets.data<int32_t>(), first, scale, ignore_index, logits.size(0),
                   logits.size(1), cuda_stream),
               "vocab_shard_loss_and_grad");
}

}  // namespace hai::cuda
