#pragma once
// StepProfiler: where a training step spends its time and memory (docs/performance.md "Step profile").
//
// Time: the code being profiled marks where each phase starts (`mark("forward.attention")`); a phase lasts until
// the next mark or until end_step(), so a step's phases tile it with no gap and no overlap and their sum is the
// step's time. Phase names are "<pass>.<kind>" (pass: step, forward, backward_input, backward_weight, optimizer);
// the same name may start many times a step (once per layer and micro-batch) and its times add up. On a CUDA device
// a mark is an event on the default stream, so a phase's time is the device time of the work queued between its
// mark and the next; time the device idles while the host waits is charged to the phase the device runs next. On
// the CPU the marks read a host clock.
//
// Memory: record_memory(point, kind) notes the device pool's live bytes at a point (zero on the CPU); a point
// seen many times keeps its largest value. The growth from one point to the next (in first-seen order) is what the
// code between them left alive, e.g. a decoder layer's saved activations.
//
// Off costs nothing: the profiled code holds a StepProfiler pointer that is null unless profiling, and calls
// mark_phase / record_memory_point, which test it.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/metrics/phase_clock.h"

namespace hai {

class StepProfiler {
 public:
  explicit StepProfiler(Device device);

  // Starts a step; the first phase starts at the first mark.
  void begin_step();
  // Ends the phase running now (if any) and starts `phase`.
  void mark(std::string_view phase);
  // The phase running now ("" before the step's first mark): a part that interrupts it (a collective) marks its
  // own phase and then this one again.
  std::string_view running_phase() const;
  // The pool's live bytes now, at `point` (e.g. "layer.3"), of a point kind (e.g. "moe").
  void record_memory(std::string_view point, std::string_view kind);
  // Ends the step's last phase, waits for the device, and adds the step's phases to the totals.
  void end_step();

  int64_t steps() const { return steps_; }
  // The mean over the profiled steps (JSON, docs/performance.md):
  //   {"device", "steps", "step_ms" (host clock, begin_step to end_step), "phases_ms" (their sum),
  //    "phases": [{"phase", "ms", "share", "calls"}], "kinds": [{"kind", "ms", "share"}],
  //    "memory": {"peak_gib", "points": [{"point", "kind", "live_gib", "growth_gib"}],
  //               "growth_gib_by_kind": {kind: mean growth per point of that kind}}}
  // ms and calls are per step; share is of phases_ms; phases and kinds are in first-marked order.
  nlohmann::ordered_json report() const;

 private:
  struct Phase {
    std::string name;
    double total_ms = 0;
    int64_t calls = 0;
  };
  struct MemoryPoint {
    std::string name;
    std::string kind;
    size_t live_bytes = 0;
  };

  size_t phase_index(std::string_view phase);

  Device device_;
  PhaseClock clock_;
  std::vector<Phase> phases_;
  std::vector<size_t> step_phases_;  // the phase of each mark of the running step
  std::vector<MemoryPoint> memory_;
  std::chrono::steady_clock::time_point step_start_;
  double total_step_ms_ = 0;
  int64_t steps_ = 0;
};

inline void mark_phase(StepProfiler* profiler, std::string_view phase) {
  if (profiler != nullptr) profiler->mark(phase);
}

inline void record_memory_point(StepProfiler* profiler, std::string_view point, std::string_view kind) {
  if (profiler != nullptr) profiler->record_memory(point, kind);
}

}  // namespace hai
