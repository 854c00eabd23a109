#include "framework/config/load.h"

#include "framework/config/parse.h"
#include "framework/config/supported.h"
#include "framework/config/validate.h"

namespace hai {

Config load_config(const std::string& path, const std::vector<std::string>& overrides, int world_size,
                   FeatureCheck features) {
  ParsedConfig parsed = parse_config_file(path, overrides);
  validate(parsed.config, world_size, parsed.lines);
  Config resolved = resolve_auto(parsed.config, world_size);
  if (features == FeatureCheck::require_supported) check_supported(resolved, parsed.lines);
  return resolved;
}

}  // namespace hai
