#include "framework/config/supported.h"

#include <string>


namespace hai {
namespace {

void require(bool supported, const KeyLines& lines, const std::string& key_path, const std::string& what) {
  if (!supported) throw_config_error(lines, key_path, "not supported yet (" + what + ")");
}

}  // namespace

void check_supported(const Config& config, const KeyLines& lines) {
  const ParallelConfig& parallel = config.parallel;
  require(!parallel.sequence_parallel, lines, "parallel.sequence_parallel", "sequence parallelism");
}

}  // namespace hai
