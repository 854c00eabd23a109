#pragma once
// The training log line (README "Reading the logs"), printed by rank 0 every logging.interval steps:
//   step 120/1000 | loss 3.4512 | lr 2.20e-04 | grad norm 0.812 | 12.3k tok/s | MFU 41.2% | 253.1 ms/step |
//   mem 12.40 GiB | ETA 1h02m03s
// (one line). The ETA comes from a smoothed step time, so one slow step (an evaluation, a checkpoint) does not
// swing it.

#include <chrono>
#include <cstdint>
#include <functional>
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
  double mfu = 0.0;  // a fraction of the peak; NaN: not known (the CPU), printed as "MFU n/a"
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

// The wall time of consecutive training steps, each measured from the previous step's measuring point (lap) to its
// own, so that the steps tile the run: device work a step queues without waiting for it (its optimizer update, which
// the next step's first read-back waits for) counts in the next step instead of in none. A step measured only from
// its own start would leave that work out whenever a read-back after the measuring point (a logging read) drains
// the queue. restart() leaves a gap out (an evaluation, a checkpoint: they wait for the device themselves).
class StepClock {
 public:
  using Now = std::function<std::chrono::steady_clock::time_point()>;
  explicit StepClock(Now now = [] { return std::chrono::steady_clock::now(); });

  void restart();   // the next step's time starts now
  double lap_ms();  // milliseconds since the last lap or restart; the next step's time starts now

 private:
  Now now_;
  std::chrono::steady_clock::time_point mark_;
};

}  // namespace hai
