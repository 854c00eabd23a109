#pragma once
// hai-train's exit codes (README "Exit codes", docs/launch.md): what a job script or scheduler can tell apart.

namespace hai {

inline constexpr int kExitSuccess = 0;
// An internal error or a failure of the machine (MPI, CUDA, a disk that fills): the message carries the source
// location that raised it.
inline constexpr int kExitFailure = 1;
// A config mistake: `config error: <key>: <what>` (docs/config.md).
inline constexpr int kExitConfigError = 2;
// A mistake outside the config: a missing or unreadable file, a checkpoint that does not fit the model, an argument
// that asks for something impossible (--eval-only without a checkpoint). The message names the key or argument and
// the path.
inline constexpr int kExitInputError = 3;
// train.steps is at or below the step of the checkpoint the run resumes from: there is nothing to train.
inline constexpr int kExitNothingToTrain = 4;
// A stop signal (runtime.stop_signals) ended training after a saved checkpoint: resubmit the job to go on.
inline constexpr int kExitStopped = 5;

}  // namespace hai
