#pragma once
// The vocabulary-parallel embedding and cross-entropy of tensor parallelism (docs/design/tensor-parallel.md): tp
// rank r holds the rows tp_range(V) of model.embed_tokens.weight and lm_head.weight (rank_share.h), so the
// embedding output is the sum over the tp ranks of each rank's rows (ids outside a rank's rows give 0 there), and the
// loss is computed from statistics summed over the ranks (framework/device/vocab_shard.h): the logits are never
// gathered. A vocabulary tp does not divide is padded only in the ranges (the last ranks hold fewer rows). On one
// rank both are the plain embedding and cross_entropy_loss_and_grad, bit for bit.

#include <cstdint>
#include <optional>

#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"
#include "parallel/tensor_parallel.h"

namespace hai {

class VocabParallelEmbedding {
 public:
  // table: this rank's rows [V_r, H] of the embedding, vocab_size: the global V.
  VocabParallelEmbedding(const Parameter& table, int64_t vocab_size, TensorParallel tp);

  // out: [T, H] fp32 <- ids: [T] i32 (global ids): the same on every tp rank. Under sequence parallelism out is
  // this rank's rows [T / tp, H] (parallel/sequence_parallel.h) of the embedding of all T ids.
  void forward(const Tensor& out, const Tensor& ids) const;
  // The table's gradient += d_out's rows of the ids this rank holds; d_out: [T, H], the same on every tp rank (under
  // sequence parallelism this rank's rows [T / tp, H], gathered first).
  void backward(const Tensor& d_out, const Tensor& ids) const;

 private:
  const Parameter& table_;
  int64_t first_;
  TensorParallel tp_;
};

// The cross-entropy of the logits of this rank's rows [first, first + V_r) of the vocabulary: losses [c] fp32 (the
// same on every tp rank) and, with a scale (training), d_logits [c, V_r] (fp32, may be logits, or bf16) as
// cross_entropy_loss_and_grad writes them; logits [c, V_r] fp32, targets [c] i32 global ids or kIgnoreTarget.
void vocab_parallel_cross_entropy(const TensorParallel& tp, int64_t first, const Tensor& losses,
                                  const Tensor& d_logits, const Tensor& logits, const Tensor& targets,
                                  std::optional<float> scale);

}  // namespace hai
