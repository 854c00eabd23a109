#pragma once
// Global gradient-norm clipping. The caller computes the global norm of the gradients (grad_norm_squared,
// framework/device/grad_norm.h, summed over the ranks that hold disjoint shards) and multiplies every gradient by
// this factor where it reads them (the fused AdamW step, framework/device/fused_adamw.h), so every rank scales by
// the same factor and no pass rewrites the gradients.

namespace hai {

// min(1, max_norm / (norm + 1e-6)); 1 when max_norm is 0 (no clipping) or the norm is not finite (the caller
// skips such a step). Throws on a negative max_norm.
double clip_factor(double norm, double max_norm);

}  // namespace hai
