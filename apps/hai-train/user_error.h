#pragma once
// UserError: a mistake of the user outside the config (a missing or unreadable file, a checkpoint that does not
// fit, an argument that asks for the impossible). Its message names the config key or command-line argument and
// the path; hai-train prints it once, without a source location, and exits with its code (exit_codes.h).

#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "apps/hai-train/exit_codes.h"

namespace hai {

class UserError : public std::runtime_error {
 public:
  // origin: where an underlying error was raised (file:line), for the debug log only.
  explicit UserError(const std::string& message, int exit_code = kExitInputError, std::string origin = "")
      : std::runtime_error(message), exit_code_(exit_code), origin_(std::move(origin)) {}

  int exit_code() const { return exit_code_; }
  const std::string& origin() const { return origin_; }

 private:
  int exit_code_;
  std::string origin_;
};

// How a relative path from the config or the command line resolves (docs/config.md "Paths"): against the current
// directory. Returns " (relative to <cwd>)" for a relative path, "" for an absolute one, for error messages.
std::string relative_path_note(const std::string& path);

}  // namespace hai
