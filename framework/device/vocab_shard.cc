#include "framework/device/vocab_shard.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"
#include "framework/device/index_check.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/vocab_shard.cu.
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
#endif

namespace hai {
namespace {

// rows: [T, D], table: [V_r, D], ids: [T]
void check_embedding(const Tensor& rows, const Tensor& table, const Tensor& ids) {
  HAI_CHECK(table.rank() == 2 && ids.rank() == 1, "embedding shard: table {} must be [V_r, D], ids {} [T]",
            table.str(), ids.str());
  check_shape(rows, Shape{ids.size(0), table.size(1)}, "embedding shard rows");
  check_dtype(table, DType::f32, "embedding shard table");
  check_dtype(rows, DType::f32, "embedding shard rows");
  check_dtype(ids, DType::i32, "embedding shard ids");
  check_same_device(rows, table, "embedding shard");
  check_same_device(ids, table, "embedding shard");
}

// logits: [T, V_r], targets: [T]
void check_logits(const Tensor& logits, const Tensor& targets) {
  HAI_CHECK(logits.rank() == 2, "vocabulary shard logits must be [T, V_r], got {}", logits.str());
  check_dtype(logits, DType::f32, "vocabulary shard logits");
  check_shape(targets, Shape{logits.size(0)}, "vocabulary shard targets");
  check_dtype(targets, DType::i32, "vocabulary shard targets");
  check_same_device(targets, logits, "vocabulary shard");
}

}  // namespace

void embedding_shard_forward(const Tensor& out, const Tensor& table, const Tensor& ids, int64_t first,
                             [[maybe_unused]] Stream stream) {
  check_embedding(out, table, ids);
  if (out.device().is_cpu()) return cpu::embedding_shard_forward(out, table, ids, first);
#ifdef HAI_WITH_CUDA
  cuda::embedding_shard_forward(out, table, ids, first, stream);
#else
  throw_no_backend("embedding_shard_forward", out.device());
#endif
}

void embedding_shard_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, int64_t first,
                              [[maybe_unused]] Stream stream) {
  check_embedding(d_out, d_table, ids);
  if (d_table.device().is_cpu()) return cpu::embedding_shard_backward(d_table, d_out, ids, first);
#ifdef HAI_WITH_CUDA
  cuda::embedding_shard_backward(d_table, d_out, ids, first, stream);
#else
  throw_no_backend("embedding_shard_backward", d_table.device());
#endif
}

void vocab_shard_row_max(const Tensor& row_max, const Tensor& logits, [[maybe_unused]] Stream stream) {
  HAI_CHECK(logits.rank() == 2, "vocabulary shard logits must be [T, V_r], got {}", logits.str());
  check_shape(row_max, Shape{logits.size(0)}, "vocabulary shard row maxima");
  check_dtype(row_max, DType::f32, "vocabulary shard row maxima");
  check_dtype(logits, DType::f32, "vocabulary shard logits");
  check_same_device(row_max, logits, "vocabulary shard");
  if (logits.device().is_cpu()) return cpu::vocab_shard_row_max(row_max, logits);
#ifdef HAI_WITH_CUDA
  cuda::vocab_shard_row_max(row_max, logits, stream);
#else
  throw_no_backend("vocab_shard_row_max", logits.device());
#endif
}

void vocab_shard_softmax_stats(const Tensor& stats, const Tensor& logits, const Tensor& row_max,
                               const Tensor& targets, int64_t first, [[maybe_unused]] Stream stream) {
  check_logits(logits, targets);
  check_shape(row_max, Shape{logits.size(0)}, "vocabulary shard row maxima");
  check_shape(stats, Shape{3, logits.size(0)}, "vocabulary shard statistics");
  check_dtype(stats, DType::f32, "vocabulary shard statistics");
  check_dtype(row_max, DType::f32, "vocabulary shard row maxima");
  check_same_device(stats, logits, "vocabulary shard");
  check_same_device(row_max, logits, "vocabulary shard");
  if (logits.device().is_cpu()) return cpu::vocab_shard_softmax_stats(stats, logits, row_max, targets, first);
#ifdef HAI_WITH_CUDA
  cuda::vocab_shard_softmax_stats(stats, logits, row_max, targets, first, stream);
#else
  throw_no_backend("vocab_shard_softmax_stats", logits.device());
#endif
}

void vocab_shard_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                               const Tensor& row_max, const Tensor& stats, const Tensor& targets, int64_t first,
                               float scale, int32_t ignore_index, [[maybe_unused]] Stream stream) {
  check_logits(logits, targets);
  check_shape(row_max, Shape{logits.size(0)}, "vocabulary shard row maxima");
  check_shape(stats, Shape{3, logits.size(0)}, "vocabulary shard statistics");
  check_shape(losses, Shape{logits.size(0)}, "vocabulary shard losses");
  if (d_logits.defined()) {
    check_shape(d_logits, logits.shape(), "vocabulary shard d_logits");
    HAI_CHECK(d_logits.dtype() == DType::f32 || d_logits.dtype() == DType::bf16,
              "vocabulary shard d_logits must be fp32 or bf16, got {}", d_logits.str());
  }
  check_dtype(row_max, DType::f32, "vocabulary shard row maxima");
  check_dtype(stats, DType::f32, "vocabulary shard statistics");
  check_dtype(losses, DType::f32, "vocabulary shard losses");
  check_same_device(row_max, logits, "vocabulary shard");
  check_same_device(stats, logits, "vocabulary shard");
  check_same_device(losses, logits, "vocabulary shard");
  if (d_logits.defined()) check_same_device(d_logits, logits, "vocabulary shard");
  if (logits.device().is_cpu()) {
    return cpu::vocab_shard_loss_and_grad(losses, d_logits, logits, row_max, stats, targets, first, scale,
                                          ignore_index);
  }
#ifdef HAI_WITH_CUDA
  cuda::vocab_shard_loss_and_grad(losses, d_logits, logits, row_max, stats, targets, first, scale, ignore_index,
                                  stream);
#else
  throw_no_backend("vocab_shard_loss_and_grad", logits.device());
#endif
}

}  // namespace hai
