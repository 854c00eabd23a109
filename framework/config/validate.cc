#include "framework/config/validate.h"

#include "framework/config/schema.h"
#include "framework/config/validation_rules.h"

namespace hai {

void validate(const Config& config, int world_size, const KeyLines& lines) {
  for (const ConfigKey& key : config_schema()) {
    if (auto problem = key.check(config)) throw_config_error(lines, key.path, *problem);
  }
  validate_sizes(config, lines);
  validate_model(config, lines);
  validate_layout(config, world_size, lines);
  validate_training(config, lines);
}

std::int64_t resolved_dp(const Config& config, int world_size) {
  const ParallelConfig& parallel = config.parallel;
  return parallel.dp ? *parallel.dp : world_size / (parallel.pp * parallel.tp);
}

std::int64_t resolved_micro_batches(const Config& config, int world_size) {
  if (config.parallel.micro_batches) return *config.parallel.micro_batches;
  return config.train.global_batch_size / (config.train.micro_batch_size * resolved_dp(config, world_size));
}

Config resolve_auto(const Config& config, int world_size) {
  Config resolved = config;
  resolved.parallel.dp = resolved_dp(config, world_size);
  resolved.parallel.micro_batches = resolved_micro_batches(config, world_size);
  return resolved;
}

}  // namespace hai
