#pragma once
// DeepSeek-V3 sequence-wise balance loss (docs/deepseek-v3.md): for each sequence of L tokens, with E routed
// experts and K experts per token,
//   f_i = E / (K * L) * (number of the sequence's tokens that chose expert i)     (constant: no gradient)
//   P_i = 1 / L * sum_t s[t, i] / sum_j s[t, j]
//   loss = alpha * sum_i f_i * P_i
// s are the sigmoid scores of router_forward (not the bias-corrected selection values). The tokens of a batch are
// N sequences of L = T / N consecutive tokens; the caller reduces the N losses (e.g. their mean).

#include "framework/tensor/tensor.h"

namespace hai {

// loss: [N] fp32, expert_fraction: [N, E] fp32 (f, saved for backward) <- scores: [T, E] fp32,
// topk_indices: [T, K] i32, with T a multiple of N.
void balance_loss_forward(const Tensor& loss, const Tensor& expert_fraction, const Tensor& scores,
                          const Tensor& topk_indices, float alpha, Stream stream = {});

// d_logits: [T, E] += the gradient of sum_n d_loss[n] * loss[n] with respect to the router logits, through the
// sigmoid s = sigmoid(logit). ADDS to d_logits, so that it composes with router_backward (which overwrites):
//   d_s[t, j] = d_loss[n] * alpha / L * (f_j - sum_i f_i s[t, i] / Z_t) / Z_t,   Z_t = sum_i s[t, i]
//   d_logits[t, j] += d_s[t, j] * s[t, j] * (1 - s[t, j])
// d_loss: [N], expert_fraction: [N, E], scores: [T, E].
void balance_loss_backward(const Tensor& d_logits, const Tensor& d_loss, const Tensor& expert_fraction,
                           const Tensor& scores, float alpha, Stream stream = {});

}  // namespace hai
