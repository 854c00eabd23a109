#include "framework/config/supported.h"

#include <string>

#include "framework/config/config_enums.h"

namespace hai {
namespace {

void require(bool supported, const KeyLines& lines, const std::string& key_path, const std::string& what) {
  if (!supported) throw_config_error(lines, key_path, "not supported yet (" + what + ")");
}

}  // namespace

void check_supported(const Config& config, const KeyLines& lines) {
  const ParallelConfig& parallel = config.parallel;
  require(parallel.pp == 1, lines, "parallel.pp", "pipeline parallelism: pp must be 1");
  require(parallel.tp == 1, lines, "parallel.tp", "tensor parallelism: tp must be 1");
  require(parallel.ep == 1, lines, "parallel.ep", "expert parallelism: ep must be 1");
  require(!parallel.sequence_parallel, lines, "parallel.sequence_parallel", "sequence parallelism");
  require(parallel.schedule == PipelineSchedule::one_f_one_b, lines, "parallel.schedule",
          std::string(to_string(parallel.schedule)));
  const PrecisionMode mode = config.precision.mode;
  require(mode == PrecisionMode::fp32 || mode == PrecisionMode::bf16, lines, "precision.mode",
          std::string(to_string(mode)));
  require(config.runtime.device != RuntimeDevice::cuda, lines, "runtime.device", "the CUDA backend");
}

}  // namespace hai
