#pragma once
// The arithmetic of one AdamW element (framework/device/adamw.h), shared by cpu::adamw_step and
// cpu::fused_adamw_step so that both round every operation the same way (and as the CUDA kernels do).

#include <cmath>

#include "framework/core/dtype.h"
#include "framework/device/adamw.h"

namespace hai::cpu {

// The step's scalars, from AdamWSettings.
struct AdamWConstants {
  float beta1;
  float beta2;
  float eps;
  float step_size;              // lr / (1 - beta1^step)
  float bias_correction2_sqrt;  // sqrt(1 - beta2^step)
  float decay;                  // 1 - lr * weight_decay
};

inline AdamWConstants adamw_constants(const AdamWSettings& settings) {
  double step = static_cast<double>(settings.step);
  double bias_correction1 = 1.0 - std::pow(static_cast<double>(settings.beta1), step);
  double bias_correction2 = 1.0 - std::pow(static_cast<double>(settings.beta2), step);
  return {.beta1 = settings.beta1,
          .beta2 = settings.beta2,
          .eps = settings.eps,
          .step_size = static_cast<float>(settings.lr / bias_correction1),
          .bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2)),
          .decay = 1.0f - settings.lr * settings.weight_decay};
}

inline float load_moment(float value) { return value; }
inline float load_moment(bf16 value) { return bf16_to_float(value.bits); }

// Stores `value` in the moment's dtype and returns what was stored, read back as fp32.
inline float store_moment(float& slot, float value) { return slot = value; }
inline float store_moment(bf16& slot, float value) {
  slot.bits = float_to_bf16(value);
  return bf16_to_float(slot.bits);
}

// Updates one parameter p and its moments m, v from the gradient g, with the given decay factor.
template <typename Moment>
void adamw_element(float& p, float g, Moment& m, Moment& v, const AdamWConstants& c, float decay) {
  float first = store_moment(m, c.beta1 * load_moment(m) + (1.0f - c.beta1) * g);
  float second = store_moment(v, c.beta2 * load_moment(v) + (1.0f - c.beta2) * g * g);
  float denominator = std::sqrt(second) / c.bias_correction2_sqrt + c.eps;
  p = p * decay - c.step_size * first / denominator;
}

}  // namespace hai::cpu
