#pragma once
// hai::Error: every failure hai-train reports carries the rank it happened on and the file:line that raised it.

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace hai {

// launch_info().rank: available before any communicator exists, so early errors are rank-tagged too.
int process_rank();

class Error : public std::runtime_error {
 public:
  Error(const std::string& message, const char* file, int line);

  const std::string& message() const { return message_; }
  const char* file() const { return file_; }
  int line() const { return line_; }
  int rank() const { return rank_; }

 private:
  std::string message_;
  const char* file_;
  int line_;
  int rank_;
};

}  // namespace hai

// HAI_THROW("bad {}", x): throw hai::Error with a fmt-formatted message and this file:line.
#define HAI_THROW(...) throw ::hai::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__)

// HAI_CHECK(cond, "what {}", x): throw unless cond holds. The condition text is part of the message.
#define HAI_CHECK(cond, ...)                                                                          \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      throw ::hai::Error(::fmt::format("check failed: {}: {}", #cond, ::fmt::format(__VA_ARGS__)), \
                         __FILE__, __LINE__);                                                         \
    }                                                                                                 \
  } while (0)
