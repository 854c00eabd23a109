#pragma once
// Auxiliary-loss-free load balancing (docs/deepseek-v3.md): count the tokens routed to each expert over the
// global batch, then move each expert's selection bias towards the mean load.

#include "framework/tensor/tensor.h"

namespace hai {

// load: [E] i32 += for every expert, the number of (token, k) assignments in topk_indices: [T, K] i32.
// ADDS, so one buffer can collect all micro-batches of a step (zero it at the start of the step; all-reduce it
// over the ranks before update_router_bias).
void accumulate_expert_load(const Tensor& load, const Tensor& topk_indices, Stream stream = {});

// bias: [E] fp32 += gamma * sign(mean(load) - load[i]) <- load: [E] i32. The sign is computed exactly in integers
// as sign(sum(load) - E * load[i]), so an expert at exactly the mean load keeps its bias. update_scale: the step's
// [1] fp32 gradient factor on the bias's device (grad_clip.h), or undefined: the bias stays when it is NaN (a
// skipped step), read when the update runs.
void update_router_bias(const Tensor& bias, const Tensor& load, float gamma, const Tensor& update_scale = {},
                        Stream stream = {});

}  // namespace hai
