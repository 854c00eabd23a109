#include "framework/core/error.h"

#include "framework/core/launch.h"

namespace hai {

int process_rank() { return launch_info().rank; }

Error::Error(const std::string& message, const char* file, int line)
    : std::runtime_error(fmt::format("[rank {}] {} ({}:{})", process_rank(), message, file, line)),
      message_(message),
      file_(file),
      line_(line),
      rank_(process_rank()) {}

}  // namespace hai
