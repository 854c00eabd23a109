#pragma once
// Global gradient-norm clipping, decided on the device. The ranks that hold disjoint shards of the gradients each
// take the squared norm of theirs (grad_norm_squared_to, grad_norm.h) and gather them; gradient_update_scale then
// turns them into the factor AdamW multiplies every gradient by where it reads them (fused_adamw.h), so every rank
// scales by the same factor, no pass rewrites the gradients and the host reads nothing back inside the step:
//   squared = sum over entries e, in order, of squared_norms[e] / R^2     (in double; R = mean_over)
//   norm    = sqrt(squared) / loss_scale           the norm of the unscaled mean gradient
//   factor  = clip_factor(norm, max_norm)
//   scale   = float(float(factor / loss_scale) / float(R))
// The gradients are the sums over the R ranks of a data-parallel group (ZeRO-1's reduce-scatter): dividing by R
// makes them the mean. The entries may be more than R: each data-parallel rank's shards of several pipeline stages
// (dp x pp entries, each a sum over dp ranks: R = dp).
// A non-finite norm (an inf or NaN gradient on any rank) makes scale NaN: the consumers skip the step on it
// (fused_adamw_step, update_router_bias), on every rank alike.

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai {

// min(1, max_norm / (norm + 1e-6)); 1 when max_norm is 0 (no clipping) or the norm is not finite. Throws on a
// negative max_norm.
double clip_factor(double norm, double max_norm);

struct GradientClipSettings {
  double max_norm = 0.0;    // 0: no clipping
  double loss_scale = 1.0;  // the factor the loss (so the gradients) was multiplied by; > 0
};

// scale: [1] fp32, written; norm: [1] i64, written with a double's bits; squared_norms: [entries] i64, each a
// double's bits; all on one device. mean_over >= 1: the ranks each gradient is a sum over.
void gradient_update_scale(const Tensor& scale, const Tensor& norm, const Tensor& squared_norms, int64_t mean_over,
                           const GradientClipSettings& settings, Stream stream = {});

}  // namespace hai
