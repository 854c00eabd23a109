#include "model/vocab_parallel.h"

#include "framework/device/cross_entropy.h"
#include "framework/device/embedding.h"
#include "framework/device/vocab_shard.h"
#include "parallel/sequence_parallel.h"

namespace hai {

VocabParallelEmbedding::VocabParallelEmbedding(const Parameter& table, int64_t vocab_size, TensorParallel tp)
    : table_(table), first_(tp.range(vocab_size).begin), tp_(tp) {
  HAI_CHECK(table.value.size(0) == tp.range(vocab_size).size,
            "{}: {} rows held where tp rank {} of {} holds {} of the vocabulary of {}", table.spec.name,
            table.value.size(0), tp.rank(), tp.size(), tp.range(vocab_size).size, vocab_size);
}

void VocabParallelEmbedding::forward(const Tensor& out, const Tensor& ids) const {
  if (tp_.size() == 1) return embedding_forward(out, table_.value, ids);
  // the ranks' rows summed: the region's exit (this rank's tokens kept under sequence parallelism)
  reduce_scatter_sequence(tp_, out, /*accumulate=*/false, [&](const Tensor& rows, bool) {
    embedding_shard_forward(rows, table_.value, ids, first_);
  });
}

void VocabParallelEmbedding::backward(const Tensor& d_out, const Tensor& ids) const {
  if (tp_.size() == 1) return embedding_backward(table_.grad_to_add_to(), d_out, ids);
  OwnedTensor gathered;
  embedding_shard_backward(table_.grad_to_add_to(), all_gather_sequence(tp_, d_out, gathered), ids, first_);
}

void vocab_parallel_cross_entropy(const TensorParallel& tp, int64_t first, const Tensor& losses,
                                  const Tensor& d_logits, const Tensor& logits, const Tensor& targets,
                                  std::optional<float> scale) {
  if (tp.size() == 1) {
    if (!scale) return cross_entropy_forward(losses, logits, targets);
    return cross_entropy_loss_and_grad(losses, d_logits, logits, targets, *scale);
  }
  int64_t tokens = logits.size(0);
  OwnedTensor row_max(Shape{tokens}, DType::f32, logits.device());   // [c]
  OwnedTensor stats(Shape{3, tokens}, DType::f32, logits.device());  // [3, c]
  vocab_shard_row_max(row_max, logits);
  tp.max(row_max);
  vocab_shard_softmax_stats(stats, logits, row_max, targets, first);
  tp.sum(stats);
  vocab_shard_loss_and_grad(losses, scale ? d_logits : Tensor(), logits, row_max, stats, targets, first,
                            scale.value_or(0.0f));
}

}  // namespace hai
