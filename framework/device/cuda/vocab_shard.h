#pragma once
// CUDA implementation of framework/device/vocab_shard.h's cross-entropy (operands already checked by the dispatcher;
// targets are not range-checked: one outside the shard selects nothing, as on the CPU). The embedding shard is in
// cuda/embedding.h.

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai::cuda {

void vocab_shard_row_max(const Tensor& row_max, const Tensor& logits, Stream stream);
void vocab_shard_softmax_stats(const Tensor& stats, const Tensor& logits, const Tensor& row_max,
                               const Tensor& targets, int64_t first, Stream stream);
void vocab_shard_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                               const Tensor& row_max, const Tensor& stats, const Tensor& targets, int64_t first,
                               float scale, int32_t ignore_index, Stream stream);

}  // namespace hai::cuda
