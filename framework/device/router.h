#pragma once
// DeepSeek-V3 MoE router (docs/deepseek-v3.md "MoE routing, exactly"): sigmoid scores, group-limited top-k
// selection on the bias-corrected scores, weights gathered from the uncorrected scores and renormalised.
// T = tokens, E = routed experts, K = experts per token. The gate GEMM (logits = x @ W_gate^T) is the caller's.
//
// Selection, per token (all fp32):
//   score[e]     = 1 / (1 + exp(-logit[e]))                 (computed in double, rounded once to fp32)
//   selection[e] = score[e] + bias[e]                       (the bias only steers the choice)
//   Experts form `groups` contiguous groups of E / groups. A group's score is the sum of its two largest
//   selection values (top1 + top2, in that order); a group of a single expert uses that one value.
//   The `groups_per_token` best groups are kept; top-K experts are taken from them by selection value.
//   Ties: a lower index wins, both between groups of equal group score and between experts of equal
//   selection value, so the result is deterministic. topk_indices lists experts best first.
// Weights: sum = score[idx[0]] + score[idx[1]] + ... (in that order), then
//   topk_weights[k] = score[idx[k]] / sum * routed_scaling_factor   (divide first, then multiply).

#include "framework/tensor/tensor.h"

namespace hai {

struct RouterOptions {
  int64_t groups = 1;                  // experts split into this many equal contiguous groups (n_group)
  int64_t groups_per_token = 1;        // groups a token may choose experts from (topk_group)
  float routed_scaling_factor = 1.0f;  // multiplies the renormalised weights
};

// scores: [T, E] fp32, topk_indices: [T, K] i32, topk_weights: [T, K] fp32 <- logits: [T, E] fp32, bias: [E] fp32.
// Requires E % groups == 0, 1 <= groups_per_token <= groups and K <= groups_per_token * E / groups.
void router_forward(const Tensor& scores, const Tensor& topk_indices, const Tensor& topk_weights,
                    const Tensor& logits, const Tensor& bias, const RouterOptions& options, Stream stream = {});

// d_logits: [T, E] <- d_topk_weights: [T, K], scores: [T, E], topk_indices: [T, K] i32. Overwrites d_logits.
// The selection is piecewise constant, so the gradient flows only through the weights of the chosen experts:
// with S = sum_k s_k and w_k = factor * s_k / S,
//   d_s_j = factor / S * (d_w_j - sum_k d_w_k * s_k / S),   d_logit_j = d_s_j * s_j * (1 - s_j),
// and zero for experts the token did not choose.
void router_backward(const Tensor& d_logits, const Tensor& d_topk_weights, const Tensor& scores,
                     const Tensor& topk_indices, float routed_scaling_factor, Stream stream = {});

}  // namespace hai
