#pragma once
// Softmax cross-entropy per token: loss[t] = logsumexp(logits[t]) - logits[t, target[t]], computed stably (the row
// maximum is subtracted before exponentiating). A target equal to ignore_index gives loss 0 and a zero gradient
// row; any other target outside [0, V) is an error. fp32 logits and losses, i32 targets. Reducing the losses
// (sum, mean over counted tokens) is the caller's job; `scale` in the backward carries that factor.

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai {

inline constexpr int32_t kIgnoreTarget = -1;

// losses: [T] <- logits: [T, V], targets: [T] i32
void cross_entropy_forward(const Tensor& losses, const Tensor& logits, const Tensor& targets,
                           int32_t ignore_index = kIgnoreTarget, Stream stream = {});

// d_logits: [T, V] = (softmax(logits) - onehot(target)) * scale per row, zero rows for ignored targets
// <- logits: [T, V], targets: [T] i32. d_logits may be logits (in place, saving a [T, V] buffer).
void cross_entropy_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets, float scale,
                            int32_t ignore_index = kIgnoreTarget, Stream stream = {});

// Both at once, for training: losses as cross_entropy_forward writes them (the same bits) and d_logits as
// cross_entropy_backward, from one softmax per row (the logits are read twice instead of three times). d_logits is
// fp32 (may be logits), or bf16: each fp32 value rounded once to nearest even, for a bf16 GEMM that reads it.
void cross_entropy_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                                 const Tensor& targets, float scale, int32_t ignore_index = kIgnoreTarget,
                                 Stream stream = {});

}  // namespace hai
