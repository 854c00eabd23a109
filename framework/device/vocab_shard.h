#pragma once
// Ops on one shard of a vocabulary split over tensor-parallel ranks: the rows [first, first + V_r) of the
// embedding table and of the output head (model/vocab_parallel.h). Ids and targets are global ids; a token whose
// id lies outside the shard selects nothing here. fp32 tables, logits and statistics, i32 ids and targets.
//
// The vocabulary-parallel cross-entropy never holds a row's logits whole: each shard computes its statistics, the
// caller sums them over the tp ranks, and every shard then finishes the loss and its own logits' gradient:
//   1. row_max [T] = max over the shard's logits (-inf for an empty shard);        caller: all-reduce max
//   2. stats [3, T]: the shard's sum_v exp(logit - row_max) as hi + lo fp32 (the sum in double, split in two so
//      that the fp32 all-reduce keeps ~double precision), and the target's logit when the shard holds it, else 0;
//                                                                                   caller: all-reduce sum
//   3. loss[t] = log(hi + lo) + row_max - target_logit (0 for an ignored target);
//      d_logits = (exp(logit - row_max) / (hi + lo) - onehot(target)) * scale (zero rows for ignored targets).
// On one rank holding the whole vocabulary this is cross_entropy.h's loss to fp32 rounding.

#include <cstdint>

#include "framework/device/cross_entropy.h"
#include "framework/tensor/tensor.h"

namespace hai {

// out: [T, D] <- table: [V_r, D] rows of the shard starting at global id `first`, ids: [T] i32 (0 rows for ids
// outside the shard).
void embedding_shard_forward(const Tensor& out, const Tensor& table, const Tensor& ids, int64_t first,
                             Stream stream = {});
// d_table: [V_r, D] += d_out: [T, D] rows of the ids inside the shard.
void embedding_shard_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, int64_t first,
                              Stream stream = {});

// row_max: [T] <- logits: [T, V_r].
void vocab_shard_row_max(const Tensor& row_max, const Tensor& logits, Stream stream = {});
// stats: [3, T] <- logits: [T, V_r], row_max: [T] (summed over the ranks), targets: [T] i32.
void vocab_shard_softmax_stats(const Tensor& stats, const Tensor& logits, const Tensor& row_max,
                               const Tensor& targets, int64_t first, Stream stream = {});
// losses: [T] and, when defined, d_logits: [T, V_r] fp32 (may be logits) or bf16 <- logits, row_max, stats (both
// reduced over the ranks), targets. An undefined d_logits: evaluation, the losses alone.
void vocab_shard_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                               const Tensor& row_max, const Tensor& stats, const Tensor& targets, int64_t first,
                               float scale, int32_t ignore_index = kIgnoreTarget, Stream stream = {});

}  // namespace hai
