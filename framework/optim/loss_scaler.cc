#include "framework/optim/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include "framework/core/error.h"

namespace hai {

LossScaler::LossScaler(const LossScaleConfig& config) : config_(config), scale_(config.init) {
  HAI_CHECK(config.init > 0 && config.min > 0 && config.window > 0,
            "loss scaling needs a positive init, min and window, got {}, {}, {}", config.init, config.min,
            config.window);
}

void LossScaler::restore(double scale, int64_t clean_steps) {
  HAI_CHECK(std::isfinite(scale) && scale >= config_.min, "loss scale {} from the checkpoint is not finite or below "
            "precision.loss_scale.min {}", scale, config_.min);
  HAI_CHECK(clean_steps >= 0 && clean_steps < config_.window, "loss scaler: {} clean steps from the checkpoint, "
            "the window is {}", clean_steps, config_.window);
  scale_ = scale;
  clean_steps_ = clean_steps;
}

void LossScaler::update(bool gradients_finite) {
  if (!gradients_finite) {
    scale_ = std::max(scale_ / 2.0, config_.min);
    clean_steps_ = 0;
    return;
  }
  if (++clean_steps_ < config_.window) return;
  scale_ *= 2.0;
  clean_steps_ = 0;
}

}  // namespace hai
