#pragma once
// The watchdog launch tests' job: a hang program (collective_hang.cc, nccl_hang.cc) on two ranks under mpirun
// (HAI_MPIRUN_COMMAND, defined by tests/CMakeLists.txt), with its exit code, wall time and stderr.

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/framework/data/temp_directory.h"

namespace hai::testing {

struct HangJobResult {
  int exit_code = -1;
  double seconds = 0;
  std::string stderr_text;
};

// Runs `hang_binary TIMEOUT_MS SLEEP_S` on two ranks, its stderr kept in `dir`.
inline HangJobResult run_hang_job(const std::string& hang_binary, const TempDirectory& dir,
                                  const std::string& timeout_ms, const std::string& sleep_s) {
  std::string err = (dir.path() / "job.err").string();
  std::string command = std::string(HAI_MPIRUN_COMMAND) + " 2 " + hang_binary + " " + timeout_ms + " " + sleep_s +
                        " >/dev/null 2>" + err;
  auto start = std::chrono::steady_clock::now();
  int status = std::system(command.c_str());
  HangJobResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream file(err);
  std::stringstream text;
  text << file.rdbuf();
  result.stderr_text = text.str();
  return result;
}

}  // namespace hai::testing
