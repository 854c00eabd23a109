#pragma once
// The training log line (DESIGN.md "Outputs"), printed by rank 0 every logging.interval steps:
//   step 120/1000 | loss 3.4512 | lr 2.20e-04 | grad norm 0.812 | 12.3k tok/s | MFU 41.2% | 253.1 ms/step |
//   mem 12.40 GiB | ETA 1h02m03s
// (one line). The ETA comes from a smoothed step time, so one slow step (an evaluation, a checkpoint) does not
// swing it.

#include <cstdint>
#include <optional>
#include <string>

namespace hai {

struct ProgressLine {
  int64_t step = 0;
  int64_t total_steps = 0;
  double loss = 0.0;
  double lr = 0.0;
  double grad_norm = 0.0;
  double tokens_per_s = 0.0;
  double mfu = 0.0;  // a fraction of the peak
  double step_ms = 0.0;
  double mem_gib = 0.0;
  double eta_s = 0.0;  // NaN: not known yet
};

std::string format_progress(const ProgressLine& line);

// Whole seconds, rounded: "45s", "2m03s", "1h02m03s", "27h00m00s"; "?" when not finite or negative.
std::string format_duration(double seconds);

// An exponential moving average of step times: the first step sets it, each later one moves it by `smoothing` of
// the difference.
class StepTimeAverage {
 public:
  explicit StepTimeAverage(double smoothing = 0.1);

  void add(double step_ms);
  // NaN before the first step.
  double step_ms() const;
  // Seconds for the remaining steps at the average step time; NaN before the first step.
  double eta_s(int64_t remaining_steps) const;

 private:
  double smoothing_;
  std::optional<double> average_ms_;
};

}  // namespace hai
