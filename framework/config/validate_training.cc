#include <fmt/format.h>

#include "framework/config/validation_rules.h"
#include "framework/config/value_codec.h"

namespace hai {
namespace {

void validate_lr_schedule(const OptimizerConfig& optimizer, const KeyLines& lines) {
  if (optimizer.min_lr > optimizer.lr) {
    throw_config_error(lines, "optimizer.min_lr",
                       fmt::format("must not exceed optimizer.lr ({} > {})", format_double(optimizer.min_lr),
                                   format_double(optimizer.lr)));
  }
  if (optimizer.schedule != LrSchedule::deepseek_v3) return;
  const DeepseekV3ScheduleConfig& stages = optimizer.deepseek_v3;
  if (stages.decay_end < stages.decay_start) {
    throw_config_error(lines, "optimizer.deepseek_v3.decay_end", "must not come before decay_start");
  }
  if (stages.final_start < stages.decay_end) {
    throw_config_error(lines, "optimizer.deepseek_v3.final_start", "must not come before decay_end");
  }
  if (stages.final_lr > optimizer.min_lr) {
    throw_config_error(lines, "optimizer.deepseek_v3.final_lr",
                       fmt::format("must not exceed optimizer.min_lr ({} > {})", format_double(stages.final_lr),
                                   format_double(optimizer.min_lr)));
  }
}

void validate_data(const Config& config, const KeyLines& lines) {
  const DataConfig& data = config.data;
  if (data.source != DataSource::indexed) return;
  if (data.path.empty()) throw_config_error(lines, "data.path", "required when data.source is indexed");
  if (config.train.eval_interval > 0 && data.valid_fraction == 0.0 && data.eval_path.empty()) {
    throw_config_error(lines, "train.eval_interval",
                       "evaluation needs data: set data.valid_fraction > 0 or data.eval_path");
  }
}

}  // namespace

void validate_training(const Config& config, const KeyLines& lines) {
  validate_lr_schedule(config.optimizer, lines);
  validate_data(config, lines);
  if (config.ema.eval && !config.ema.enabled) {
    throw_config_error(lines, "ema.eval", "needs ema.enabled: true");
  }
  const LossScaleConfig& loss_scale = config.precision.loss_scale;
  if (loss_scale.min > loss_scale.init) {
    throw_config_error(lines, "precision.loss_scale.min",
                       fmt::format("must not exceed precision.loss_scale.init ({} > {})", format_double(loss_scale.min),
                                   format_double(loss_scale.init)));
  }
}

}  // namespace hai
