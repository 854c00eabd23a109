#pragma once
// The MoE layer's sequence-wise balance loss (framework/device/balance_loss.h) when the router sees only this tp
// rank's rows of the tokens (sequence parallelism, parallel/sequence_parallel.h): a sequence's expert fractions and
// mean scores need all its tokens, so the scores [T / tp, E] and choices [T / tp, K] are gathered over the tp ranks
// (E + K values a token, not the hidden state) and every tp rank computes the same loss of every sequence; each
// rank's backward then adds the gradient of its own rows only. Without sequence parallelism these are the device
// ops themselves.

#include "framework/tensor/tensor.h"
#include "parallel/tensor_parallel.h"

namespace hai {

// loss: [N] fp32, expert_fraction: [N, E] <- scores: [T_r, E] fp32, topk_indices: [T_r, K] i32, this rank's rows
// of the N sequences' T tokens (T_r = T / tp under sequence parallelism, else T).
void sequence_balance_loss_forward(const TensorParallel& tp, const Tensor& loss, const Tensor& expert_fraction,
                                   const Tensor& scores, const Tensor& topk_indices, float alpha);
// d_logits: [T_r, E] += the gradient of sum_n d_loss[n] * loss[n] at this rank's rows; d_loss: [N],
// expert_fraction: [N, E] (forward's), scores: [T_r, E].
void sequence_balance_loss_backward(const TensorParallel& tp, const Tensor& d_logits, const Tensor& d_loss,
                                    const Tensor& expert_fraction, const Tensor& scores, float alpha);

}  // namespace hai
