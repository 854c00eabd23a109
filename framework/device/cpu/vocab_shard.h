#pragma once
// CPU reference of framework/device/vocab_shard.h (operands already checked by the dispatcher).

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai::cpu {

void embedding_shard_forward(const Tensor& out, const Tensor& table, const Tensor& ids, int64_t first);
void embedding_shard_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, int64_t first);
void vocab_shard_row_max(const Tensor& row_max, const Tensor& logits);
void vocab_shard_softmax_stats(const Tensor& stats, const Tensor& logits, const Tensor& row_max,
                               const Tensor& targets, int64_t first);
void vocab_shard_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                               const Tensor& row_max, const Tensor& stats, const Tensor& targets, int64_t first,
                               float scale, int32_t ignore_index);

}  // namespace hai::cpu
