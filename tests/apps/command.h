#pragma once
// Running the hai-train binary from a test: its exit code, stdout and stderr.

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/framework/data/temp_directory.h"

namespace hai::testing {

struct CommandResult {
  int exit_code = -1;  // -1: did not exit normally
  std::string out;
  std::string err;
};

// Runs `HAI_TRAIN_BINARY arguments` (a shell word list) in `dir`, with stdout and stderr captured in files there.
inline CommandResult run_hai_train(const std::string& arguments, const std::filesystem::path& dir) {
  std::string out_path = (dir / "hai-train.out").string(), err_path = (dir / "hai-train.err").string();
  std::string command =
      "cd " + dir.string() + " && " + HAI_TRAIN_BINARY + " " + arguments + " >" + out_path + " 2>" + err_path;
  int status = std::system(command.c_str());
  std::vector<char> out = read_bytes(out_path), err = read_bytes(err_path);
  return {.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
          .out = std::string(out.begin(), out.end()),
          .err = std::string(err.begin(), err.end())};
}

// The last line of `text`, without its newline.
inline std::string last_line(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.substr(text.rfind('\n') + 1);  // NOTE: npos + 1 is 0, the whole text when it is one line
}

}  // namespace hai::testing
