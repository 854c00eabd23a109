#include "framework/device/rope_table.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace hai {
namespace {

void check_settings(const RopeSettings& settings) {
  HAI_CHECK(settings.rope_dim > 0 && settings.rope_dim % 2 == 0, "rope_dim must be positive and even, got {}",
            settings.rope_dim);
  HAI_CHECK(settings.max_positions > 0, "rope max_positions must be positive, got {}", settings.max_positions);
  HAI_CHECK(settings.theta > 1.0, "rope theta must exceed 1, got {}", settings.theta);
  HAI_CHECK(settings.yarn_factor >= 1.0, "yarn factor must be at least 1, got {}", settings.yarn_factor);
  HAI_CHECK(settings.original_max_position > 0, "yarn original_max_position must be positive, got {}",
            settings.original_max_position);
  HAI_CHECK(settings.beta_fast > 0 && settings.beta_slow > 0, "yarn beta_fast ({}) and beta_slow ({}) must be positive",
            settings.beta_fast, settings.beta_slow);
}

// The (fractional) pair index whose wavelength fits `rotations` times into the original context.
double correction_dim(double rotations, const RopeSettings& settings) {
  double dim = static_cast<double>(settings.rope_dim);
  return dim * std::log(static_cast<double>(settings.original_max_position) / (rotations * 2 * std::numbers::pi)) /
         (2 * std::log(settings.theta));
}

// ramp(i) for pair i: 0 keeps the frequency, 1 divides it by the factor.
double yarn_ramp(int64_t pair, const RopeSettings& settings) {
  double low = std::max(std::floor(correction_dim(settings.beta_fast, settings)), 0.0);
  double high =
      std::min(std::ceil(correction_dim(settings.beta_slow, settings)), static_cast<double>(settings.rope_dim - 1));
  if (low == high) high += 0.001;
  return std::clamp((static_cast<double>(pair) - low) / (high - low), 0.0, 1.0);
}

}  // namespace

bool yarn_active(const RopeSettings& settings) { return settings.max_positions > settings.original_max_position; }

std::vector<double> rope_inverse_frequencies(const RopeSettings& settings) {
  check_settings(settings);
  std::vector<double> frequencies(static_cast<size_t>(settings.rope_dim / 2));
  for (int64_t pair = 0; pair < settings.rope_dim / 2; ++pair) {
    double frequency = std::pow(settings.theta, -2.0 * static_cast<double>(pair) / settings.rope_dim);
    if (yarn_active(settings)) {
      // NOTE: frequency * (1 - ramp) + frequency / factor * ramp, written so that factor 1 is exactly plain RoPE.
      frequency *= 1.0 - yarn_ramp(pair, settings) * (1.0 - 1.0 / settings.yarn_factor);
    }
    frequencies[static_cast<size_t>(pair)] = frequency;
  }
  return frequencies;
}

void fill_rope_table(const RopeTable& table, const RopeSettings& settings) {
  std::vector<double> frequencies = rope_inverse_frequencies(settings);
  Shape shape{settings.max_positions, settings.rope_dim / 2};
  for (const Tensor* tensor : {&table.cos, &table.sin}) {
    check_shape(*tensor, shape, "rope table");
    check_dtype(*tensor, DType::f32, "rope table");
    HAI_CHECK(tensor->device().is_cpu(), "fill_rope_table fills CPU tensors, got {}", tensor->str());
  }
  float* cos = table.cos.data<float>();  // [P, R/2]
  float* sin = table.sin.data<float>();  // [P, R/2]
  int64_t pairs = settings.rope_dim / 2;
  for (int64_t position = 0; position < settings.max_positions; ++position) {
    for (int64_t pair = 0; pair < pairs; ++pair) {
      double angle = static_cast<double>(position) * frequencies[static_cast<size_t>(pair)];
      cos[position * pairs + pair] = static_cast<float>(std::cos(angle));
      sin[position * pairs + pair] = static_cast<float>(std::sin(angle));
    }
  }
}

double yarn_mscale(const RopeSettings& settings) {
  check_settings(settings);
  if (!yarn_active(settings)) return 1.0;
  return 0.1 * settings.mscale * std::log(settings.yarn_factor) + 1.0;
}

double attention_softmax_scale(int64_t qk_head_dim, const RopeSettings& settings) {
  HAI_CHECK(qk_head_dim > 0, "qk_head_dim must be positive, got {}", qk_head_dim);
  double mscale = yarn_mscale(settings);
  return mscale * mscale / std::sqrt(static_cast<double>(qk_head_dim));
}

}  // namespace hai
