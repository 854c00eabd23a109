#pragma once
// Launchers of the balance loss kernels behind framework/device/balance_loss.h: N sequences of L tokens,
// E experts, K experts per token. The expert fractions are exact (integer counts); the per-token sums over E run
// in a warp tree, the per-sequence sum over chunks of 128 tokens (a block tree each) and then over the chunks (a
// warp tree), so the loss and gradients differ from the CPU op's serial sums by rounding only (deterministic from
// run to run).

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

struct BalanceShape {
  int64_t sequences;            // N
  int64_t tokens_per_sequence;  // L
  int64_t experts;              // E
  int64_t experts_per_token;    // K
};

// The largest E the forward kernel holds in shared memory.
inline constexpr int64_t kMaxBalanceExperts = 4096;

// loss [N], expert_fraction [N, E] <- scores [N * L, E], topk_indices [N * L, K]. A block per 128 tokens of a
// sequence, then a warp per sequence.
cudaError_t balance_loss_forward(float* loss, float* expert_fraction, const float* scores,
                                 const int32_t* topk_indices, const BalanceShape& shape, float alpha,
                                 cudaStream_t stream);

// d_logits [N * L, E] += the gradient through the sigmoid <- d_loss [N], expert_fraction [N, E], scores.
cudaError_t balance_loss_backward(float* d_logits, const float* d_loss, const float* expert_fraction,
                                  const float* scores, const BalanceShape& shape, float alpha, cudaStream_t stream);

}  // namespace hai::cuda::kernels
