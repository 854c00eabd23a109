#pragma once
// Which gradients the tp ranks sum under sequence parallelism (parallel/sequence_parallel.h,
// ReplicatedGradientSum): those of the trainable parameters every tp rank holds whole (the norms, q_a_proj,
// kv_a_proj_with_mqa, the router's gate, MTP's eh_proj: not split by model/tensor_parallel_split.h) and applies to its
// own tokens only. Not the routed experts: their replicas (the expert-DP group, which spans the tp ranks) already
// sum them. Not the split boxes: each rank's box is its own.

#include <vector>

#include "framework/params/parameter_store.h"
#include "model/rank_share.h"
#include "parallel/sequence_parallel.h"

namespace hai {

// The store's gradients of those parameters of `share`, with their gradient buckets (model/gradient_buckets.h), in
// the share's order (the same on every tp rank).
std::vector<ReplicatedGradientSum::Gradient> sequence_parallel_summed_gradients(
    const std::vector<HeldParameter>& share, const ParameterStore& store);

}  // namespace hai
