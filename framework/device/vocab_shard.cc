#include "framework/device/vocab_shard.h"

#include "framework/device/cpu/vocab_shard.h"
#include "framework/device/dispatch.h"
#include "framework/device/index_check.h"

namespace hai {
namespace {

// NOTE: the CUDA kernels of these ops are not written yet (docs/design/tensor-parallel.md): tp > 1 runs on CPU ranks.
void check_cpu(const Tensor& tensor, const char* op) {
  if (!tensor.device().is_cpu()) throw_no_backend(op, tensor.device());
}

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
  check_cpu(out, "embedding_shard_forward");
  cpu::embedding_shard_forward(out, table, ids, first);
}

void embedding_shard_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, int64_t first,
                              [[maybe_unused]] Stream stream) {
  check_embedding(d_out, d_table, ids);
  check_cpu(d_table, "embedding_shard_backward");
  cpu::embedding_shard_backward(d_table, d_out, ids, first);
}

void vocab_shard_row_max(const Tensor& row_max, const Tensor& logits, [[maybe_unused]] Stream stream) {
  HAI_CHECK(logits.rank() == 2, "vocabulary shard logits must be [T, V_r], got {}", logits.str());
  check_shape(row_max, Shape{logits.size(0)}, "vocabulary shard row maxima");
  check_dtype(row_max, DType::f32, "vocabulary shard row maxima");
  check_cpu(logits, "vocab_shard_row_max");
  cpu::vocab_shard_row_max(row_max, logits);
}

void vocab_shard_softmax_stats(const Tensor& stats, const Tensor& logits, const Tensor& row_max,
                               const Tensor& targets, int64_t first, [[maybe_unused]] Stream stream) {
  check_logits(logits, targets);
  check_shape(row_max, Shape{logits.size(0)}, "vocabulary shard row maxima");
  check_shape(stats, Shape{3, logits.size(0)}, "vocabulary shard statistics");
  check_dtype(stats, DType::f32, "vocabulary shard statistics");
  check_cpu(logits, "vocab_shard_softmax_stats");
  cpu::vocab_shard_softmax_stats(stats, logits, row_max, targets, first);
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
  check_cpu(logits, "vocab_shard_loss_and_grad");
  cpu::vocab_shard_loss_and_grad(losses, d_logits, logits, row_max, stats, targets, first, scale, ignore_index);
}

}  // namespace hai
