#include "framework/device/cpu/adamw.h"

#include <cmath>

#include "framework/device/cpu/parallel.h"

namespace hai::cpu {
namespace {

float load(float value) { return value; }
float load(bf16 value) { return bf16_to_float(value.bits); }

// Stores `value` in the moment's dtype and returns what was stored, read back as fp32.
float store(float& slot, float value) { return slot = value; }
float store(bf16& slot, float value) {
  slot.bits = float_to_bf16(value);
  return bf16_to_float(slot.bits);
}

template <typename Moment>
void update(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
            const AdamWSettings& settings) {
  float* p = params.data<float>();        // [N]
  const float* g = grads.data<float>();   // [N]
  Moment* m = exp_avg.data<Moment>();     // [N]
  Moment* v = exp_avg_sq.data<Moment>();  // [N]
  double step = static_cast<double>(settings.step);
  double bias_correction1 = 1.0 - std::pow(static_cast<double>(settings.beta1), step);
  double bias_correction2 = 1.0 - std::pow(static_cast<double>(settings.beta2), step);
  float step_size = static_cast<float>(settings.lr / bias_correction1);
  float bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  float decay = 1.0f - settings.lr * settings.weight_decay;
  constexpr int64_t kWorkPerElement = 16;  // a sqrt, a division and a dozen multiply-adds
  parallel_for(params.numel(), kWorkPerElement, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float first = store(m[i], settings.beta1 * load(m[i]) + (1.0f - settings.beta1) * g[i]);
      float second = store(v[i], settings.beta2 * load(v[i]) + (1.0f - settings.beta2) * g[i] * g[i]);
      float denominator = std::sqrt(second) / bias_correction2_sqrt + settings.eps;
      p[i] = p[i] * decay - step_size * first / denominator;
    }
  });
}

}  // namespace

void adamw_step(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamWSettings& settings) {
  if (exp_avg.dtype() == DType::bf16) return update<bf16>(params, grads, exp_avg, exp_avg_sq, settings);
  update<float>(params, grads, exp_avg, exp_avg_sq, settings);
}

}  // namespace hai::cpu
