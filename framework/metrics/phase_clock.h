#pragma once
// PhaseClock: the timestamps of a step's phase boundaries, for StepProfiler. On a CUDA device each timestamp is a
// CUDA event recorded on the default stream (where every op runs), so the time between two timestamps is the
// device time of the work queued between them; on the CPU it is a host clock. The events are created once and
// reused by every step.

#include <chrono>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hai {

class PhaseClock {
 public:
  explicit PhaseClock(Device device);
  ~PhaseClock();
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;

  // Forgets the recorded timestamps (the events are kept for the next step).
  void clear();
  // A timestamp now: queued on the default stream of a CUDA device, read at once on the CPU.
  void record();
  size_t recorded() const { return recorded_; }
  // [recorded - 1] milliseconds from each timestamp to the next; waits for the device to reach the last one.
  std::vector<double> intervals_ms() const;

 private:
  Device device_;
  std::vector<void*> events_;  // cudaEvent_t, created as needed
  std::vector<std::chrono::steady_clock::time_point> host_times_;
  size_t recorded_ = 0;
};

}  // namespace hai
