#pragma once
// The fault suite's tools (docs/reliability.md): running a binary through the shell (alone, under mpirun, with a
// time limit and a memory limit) and telling an exit code from a death by signal; the tiny config's files.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/apps/tiny_config.h"
#include "tests/framework/data/temp_directory.h"

namespace hai::testing {

struct ProcessResult {
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;      // the signal that killed it (also when the shell reports it as 128 + signal)
  std::string out;
  std::string err;
};

inline std::string file_text(const std::filesystem::path& path) {
  std::vector<char> bytes = read_bytes(path.string());
  return {bytes.begin(), bytes.end()};
}

// Runs the shell command `command` in `dir` with HAI_CPU_THREADS=1, its stdout and stderr captured there.
inline ProcessResult run_shell(const std::string& command, const std::filesystem::path& dir) {
  std::string full = "cd '" + dir.string() + "' && export HAI_CPU_THREADS=1 && (" + command +
                     ") >command.out 2>command.err";
  int status = std::system(full.c_str());
  ProcessResult result;
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
    if (result.exit_code > 128) result.signal = result.exit_code - 128;
  }
  result.out = file_text(dir / "command.out");
  result.err = file_text(dir / "command.err");
  return result;
}

inline std::string mpirun(int ranks) {
  return std::string(HAI_MPIRUN_COMMAND) + " " + std::to_string(ranks) + " -x HAI_CPU_THREADS ";
}

// "'a.b=1' 'c=2'" for --set.
inline std::string set_flags(const std::vector<std::string>& overrides) {
  std::string flags;
  for (const std::string& item : overrides) flags += " --set '" + item + "'";
  return flags;
}

// hai-train on the tiny config of `dir` (written there) with `overrides` and `extra` arguments.
inline std::string hai_train_command(const std::filesystem::path& dir, const std::vector<std::string>& overrides,
                                     const std::string& extra = "") {
  return std::string(HAI_TRAIN_BINARY) + " --config " + write_tiny_config(dir) + set_flags(overrides) + " " + extra;
}

}  // namespace hai::testing
