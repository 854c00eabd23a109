#pragma once
// The multi-tensor AdamW step: every run of an AdamWSegmentTable (adamw_segments.h) in one pass (one CUDA launch),
// with adamw.h's arithmetic on the scaled gradient, and optionally the compute copy of each updated value:
//   g  = grads[s] * gradient_scale                (the loss-scale unscale times the clipping factor: one float)
//   p  = values[v] * (1 - lr * wd) - ...          (wd = settings.weight_decay on runs that ask for it, else 0)
//   m, v as adamw.h, rounded to the moment dtype; compute[v] = p rounded to nearest even (bf16 or fp16)
// for every element s = state_offset + i, v = value_offset + i of every run. The gradients are read, not written.
// With gradient_scale 1 the values and moments equal adamw_step's on each segment bit for bit. A NaN gradient_scale
// skips the step: values, moments and compute copy stay as they are (a step with non-finite gradients, grad_clip.h).

#include <utility>

#include "framework/device/adamw.h"
#include "framework/device/adamw_segments.h"
#include "framework/tensor/tensor.h"

namespace hai {

// The one float the gradients are multiplied by: given on the host, or read by the step when it runs from a [1]
// fp32 tensor on the values' device (a factor made on the device, grad_clip.h: no host synchronisation).
struct GradientScale {
  GradientScale(float factor) : factor(factor) {}  // NOLINT(google-explicit-constructor): a host float is a scale
  explicit GradientScale(Tensor on_device) : on_device(std::move(on_device)) {}

  float factor = 1.0f;
  Tensor on_device;  // [1] fp32, or undefined (then `factor`)
};

// values: [N] fp32 (updated); compute: [N] bf16 or fp16 (written at the updated elements), or an undefined Tensor
// to write none; grads: [M] fp32; exp_avg, exp_avg_sq: [M] fp32 or bf16 (updated). The table's runs must lie in
// [0, N) and [0, M) and live on the tensors' device.
void fused_adamw_step(const Tensor& values, const Tensor& compute, const Tensor& grads, const Tensor& exp_avg,
                      const Tensor& exp_avg_sq, const AdamWSegmentTable& segments, const AdamWSettings& settings,
                      const GradientScale& gradient_scale, Stream stream = {});

}  // namespace hai
