#pragma once
// The run directory's record of invocations (logging.run_dir; docs/config.md "The run directory"). Rank 0 writes:
//   config.yaml        the effective config of the latest training invocation (never --eval-only's)
//   configs/NNNN.yaml  every invocation's effective config (training, --eval-only, --profile-steps), numbered from
//                      0001 in the order they started, each headed by comments: time, command line, what it did
// metrics.jsonl, tensorboard/ and train.log are written elsewhere (run_metrics.h, run_log.h).

#include <cstdint>
#include <string>

#include "framework/config/config.h"

namespace hai {

enum class Invocation { train, eval_only, profile };

struct InvocationRecord {
  Invocation kind = Invocation::train;
  std::string command_line;  // as typed, for the header
  int64_t start_step = 0;    // the checkpoint's step it starts from (0: fresh)
};

// Writes configs/NNNN.yaml (the next free number) and, for a training invocation, replaces config.yaml (written to
// a temporary and renamed, so a crash leaves the previous one). Returns the path of configs/NNNN.yaml. Throws
// UserError naming logging.run_dir when the directory cannot be written.
std::string record_invocation(const Config& config, const InvocationRecord& record);

// The command line as one string, each argument quoted when it holds a space or a shell character.
std::string command_line(int argc, char** argv);

}  // namespace hai
