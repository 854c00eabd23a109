#include "apps/hai-ckpt/checkpoint_source.h"

#include <optional>
#include <span>

#include "framework/checkpoint/crc32c.h"
#include "framework/checkpoint/resolve_checkpoint.h"
#include "framework/config/config_error.h"
#include "framework/config/parse.h"
#include "framework/core/error.h"

namespace hai {

std::string checkpoint_step_dir(const std::string& path) {
  HAI_CHECK(path != "auto" && path != "none", "'{}' is not a checkpoint path", path);
  std::optional<std::string> step_dir = resolve_checkpoint(path, path);
  HAI_CHECK(step_dir.has_value(), "{} is not a checkpoint", path);
  return *step_dir;
}

Config checkpoint_config(const CheckpointState& state, const std::string& what) {
  // NOTE: JSON is YAML (flow style), so the config parser reads the recorded JSON as it is.
  try {
    return parse_config_text(state.config.dump(), {}, what + " config").config;
  } catch (const ConfigError& error) {
    HAI_THROW("{}: the recorded config does not parse: {}", what, error.what());
  }
}

uint32_t config_digest(const CheckpointState& state) {
  std::string text = state.config.dump();
  return crc32c(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

}  // namespace hai
