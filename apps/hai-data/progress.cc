#include "apps/hai-data/progress.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace hai {

ProgressDisplay::ProgressDisplay()
    : terminal_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()), last_line_(start_) {}

void ProgressDisplay::update(const TextDatasetProgress& progress) {
  auto now = std::chrono::steady_clock::now();
  double seconds = std::chrono::duration<double>(now - start_).count();
  double fraction = progress.input_bytes > 0 ? static_cast<double>(progress.bytes_done) / progress.input_bytes : 1.0;
  double megabytes = static_cast<double>(progress.bytes_done) / 1e6;
  std::string numbers = fmt::format("{:5.1f}% {:.1f}/{:.1f} MB, {:.1f} MB/s, {} documents, {} tokens", 100.0 * fraction,
                                    megabytes, static_cast<double>(progress.input_bytes) / 1e6,
                                    seconds > 0 ? megabytes / seconds : 0.0, progress.documents, progress.tokens);
  if (terminal_) {
    constexpr int kWidth = 30;
    int filled = static_cast<int>(fraction * kWidth);
    fmt::print(stderr, "\r[{}{}] {}", std::string(static_cast<size_t>(filled), '#'),
               std::string(static_cast<size_t>(kWidth - filled), '.'), numbers);
    drawn_ = true;
  } else if (std::chrono::duration<double>(now - last_line_).count() >= line_interval_s_) {
    fmt::print(stderr, "hai-data: {}\n", numbers);
    last_line_ = now;
  }
  std::fflush(stderr);
}

void ProgressDisplay::finish() {
  if (drawn_) fmt::print(stderr, "\n");
}

}  // namespace hai
