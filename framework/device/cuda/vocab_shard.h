#pragma once
// CUDA implementation of framework/device/vocab_shard.h (operands already checked by the dispatcher; ids and targets
// are not range-checked: an id outside the shard selects nothing, as on the CPU).

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai::cuda {

void embedding_shard_forward(const Tensor& out, const Tensor& table, const Tensor& ids, int64_t first, Stream stream);
void embedding_shard_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, int64_t first,
                              Stream stream);
void vocab_shard_row_max(const Tensor& row_max, const Tensor& logits, Stream stream);
void vocab_shard_softmax_stats(const Tensor& stats, const Tensor& logits, const Tensor& row_max,
                               const Tensor& targets, int64_t first, Stream stream);
void vocab_shard_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                               const Tensor& row_max, const Tensor& stats, const Tensor& targets, int64_t first,
                               float scale, int32_t ignore_index, Stream stream);

}  // namespace hai::cuda
