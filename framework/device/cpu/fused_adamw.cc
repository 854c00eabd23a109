#include "framework/device/cpu/ops.h"

#include <cmath>

#include "framework/device/cpu/adamw_element.h"
#include "framework/device/cpu/parallel.h"

namespace hai::cpu {
namespace {

// The compute copy's bits of `value` (bf16 or fp16, round to nearest even).
uint16_t compute_bits(float value, DType dtype) {
  return dtype == DType::bf16 ? float_to_bf16(value) : float_to_fp16(value);
}

template <typename Moment>
void update(const Tensor& values, const Tensor& compute, const Tensor& grads, const Tensor& exp_avg,
            const Tensor& exp_avg_sq, const AdamWSegmentTable& segments, const AdamWSettings& settings,
            float gradient_scale) {
  float* p = values.data<float>();                              // [N]
  auto* compute_values = static_cast<uint16_t*>(compute.raw());  // [N] bf16 or fp16 bits; null: none
  const float* g = grads.data<float>();                          // [M]
  Moment* m = exp_avg.data<Moment>();                            // [M]
  Moment* v = exp_avg_sq.data<Moment>();                         // [M]
  const int64_t* runs = segments.runs().data<int64_t>();         // [R, 4]
  AdamWConstants constants = adamw_constants(settings);
  constexpr int64_t kWorkPerRun = 16 * kAdamWRunElements;  // a sqrt, a division and a dozen multiply-adds each
  parallel_for(segments.run_count(), kWorkPerRun, [&](int64_t begin, int64_t end) {
    for (int64_t run = begin; run < end; ++run) {
      const int64_t* row = runs + run * kAdamWRunColumns;
      int64_t value_offset = row[0], state_offset = row[1], numel = row[2];
      float decay = row[3] != 0 ? constants.decay : 1.0f;
      for (int64_t i = 0; i < numel; ++i) {
        int64_t value = value_offset + i, state = state_offset + i;
        adamw_element(p[value], g[state] * gradient_scale, m[state], v[state], constants, decay);
        if (compute_values != nullptr) compute_values[value] = compute_bits(p[value], compute.dtype());
      }
    }
  });
}

}  // namespace

void fused_adamw_step(const Tensor& values, const Tensor& compute, const Tensor& grads, const Tensor& exp_avg,
                      const Tensor& exp_avg_sq, const AdamWSegmentTable& segments, const AdamWSettings& settings,
                      const GradientScale& gradient_scale) {
  float scale = gradient_scale.on_device.defined() ? gradient_scale.on_device.data<float>()[0] : gradient_scale.factor;
  if (std::isnan(scale)) return;  // a skipped step
  if (exp_avg.dtype() == DType::bf16) {
    return update<bf16>(values, compute, grads, exp_avg, exp_avg_sq, segments, settings, scale);
  }
  update<float>(values, compute, grads, exp_avg, exp_avg_sq, segments, settings, scale);
}

}  // namespace hai::cpu
