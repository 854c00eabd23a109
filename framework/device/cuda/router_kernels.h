#pragma once
// Launchers of the router kernels behind framework/device/router.h (T tokens, E experts, K experts per token).
// One warp routes one token. Every rounded operation is the CPU op's, in the CPU op's order, so scores, indices
// and weights (and the backward's d_logits) are bit-identical to the CPU reference.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

struct RouterShape {
  int64_t tokens;             // T
  int64_t experts;            // E
  int64_t experts_per_token;  // K, at most 32 (one lane holds one choice)
  int64_t groups;             // E % groups == 0
  int64_t groups_per_token;
};

// The largest E the forward kernel holds in shared memory.
inline constexpr int64_t kMaxRouterExperts = 2048;

// scores [T, E], topk_indices [T, K], topk_weights [T, K] <- logits [T, E], bias [E].
cudaError_t router_forward(float* scores, int32_t* topk_indices, float* topk_weights, const float* logits,
                           const float* bias, const RouterShape& shape, float routed_scaling_factor,
                           cudaStream_t stream);

// d_logits [T, E] (overwritten) <- d_topk_weights [T, K], scores [T, E], topk_indices [T, K].
cudaError_t router_backward(float* d_logits, const float* d_topk_weights, const float* scores,
                            const int32_t* topk_indices, const RouterShape& shape, float routed_scaling_factor,
                            cudaStream_t stream);

}  // namespace hai::cuda::kernels
