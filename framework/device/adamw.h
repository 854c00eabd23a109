#pragma once
// One AdamW step with PyTorch's semantics (torch.optim.AdamW): for every element,
//   p  -= lr * weight_decay * p                           (decoupled weight decay, first)
//   m   = beta1 * m + (1 - beta1) * g
//   v   = beta2 * v + (1 - beta2) * g^2
//   p  -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
// Parameters and gradients are fp32. The moments m (exp_avg) and v (exp_avg_sq) are both fp32 or both bf16 (the
// optimizer's moment_dtype); bf16 moments are rounded to nearest even after each update and the parameter update
// uses the rounded values, as PyTorch does with bf16 optimizer state.

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai {

struct AdamWSettings {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  int64_t step = 1;  // 1 for the first step (bias correction)
};

// Throws unless step >= 1, beta1 and beta2 lie in [0, 1) and eps > 0.
void check_adamw_settings(const AdamWSettings& settings);

// params: [N] fp32 (updated), exp_avg, exp_avg_sq: [N] fp32 or bf16 (updated) <- grads: [N] fp32
void adamw_step(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamWSettings& settings, Stream stream = {});

}  // namespace hai
