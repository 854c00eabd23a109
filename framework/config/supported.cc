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
  // NOTE: sequence parallelism is tested on CPU ranks only; it stays refused on GPUs until it is tested there.
  require(!parallel.sequence_parallel || config.runtime.device != RuntimeDevice::cuda, lines,
          "parallel.sequence_parallel", "sequence parallelism on GPUs: it runs on CPU ranks");
}

}  // namespace hai
