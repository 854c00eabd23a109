#pragma once
// hai-data's progress on stderr: on a terminal, one bar redrawn in place; otherwise (a log file) one line every
// `line_interval_s` seconds.

#include <chrono>

#include "framework/data/text_dataset_builder.h"

namespace hai {

class ProgressDisplay {
 public:
  ProgressDisplay();
  void update(const TextDatasetProgress& progress);
  // Ends the bar's line (terminal only).
  void finish();

 private:
  bool terminal_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_line_;
  double line_interval_s_ = 10.0;
};

}  // namespace hai
