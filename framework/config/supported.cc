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
  require(parallel.tp == 1, lines, "parallel.tp", "tensor parallelism: tp must be 1");
  require(!parallel.sequence_parallel, lines, "parallel.sequence_parallel", "sequence parallelism");
  // NOTE: ranks exchange host tensors over MPI; device tensors need the NCCL communicator, which is not written yet.
  const int64_t world = parallel.dp.value() * parallel.pp * parallel.tp;
  require(config.runtime.device != RuntimeDevice::cuda || world == 1, lines, "runtime.device",
          "cuda on several ranks: the NCCL communicator");
}

}  // namespace hai
