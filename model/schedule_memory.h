#pragma once
// The activation-side peak of each pipeline rank, from its program (parallel/pipeline/schedule.h) as the engine runs
// it (parallel/pipeline/engine.cc): walking its instructions, the bytes live at each point are what the forwards of
// the (stage, micro-batch) pairs not yet through their B keep, the stage-boundary tensors the engine holds (outputs
// and input gradients until they are used or sent, received ones until used, and each posted send until the engine
// sees it complete), and during a B the backward temporaries of its stage and its input-gradient buffer. The peak is
// the largest of them, split into those kinds.
//
// When a send completes: the engine tests its posted sends at every instruction boundary and frees those complete;
// a send completes once its receiver took the message. The walk times every rank's program with the schedule
// simulator (parallel/pipeline/simulator.h, StepCosts{}: F 1, B 1, W 1, FB 3, messages instant) and frees a send
// before the sender's first instruction that starts after its receive, so a send is held at least through the
// instruction after it. A transport that completes a send before the receiver asks (MPI's eager protocol for small
// messages) frees it sooner: the plan is then an upper bound.

#include <cstdint>
#include <vector>

#include "parallel/pipeline/schedule.h"

namespace hai {

// What one micro-batch costs on each stage, in bytes.
struct StageMemoryCosts {
  std::vector<int64_t> saved;     // [stages] what a forward keeps until its B
  std::vector<int64_t> backward;  // [stages] what a B holds beside it at its peak (backward temporaries)
  int64_t boundary = 0;           // one tensor between stages ([T, H] fp32)
};

struct ScheduleMemoryPeak {
  int64_t saved = 0;     // the forwards' kept bytes at the peak
  int64_t backward = 0;  // the running B's temporaries at the peak (0 if the peak is not inside a B)
  int64_t buffers = 0;   // the stage-boundary tensors at the peak
  int64_t total() const { return saved + backward + buffers; }
};

// The peak of every pipeline rank of `schedule`, by pipeline rank.
std::vector<ScheduleMemoryPeak> schedule_memory_peaks(const Schedule& schedule, const StageMemoryCosts& costs);

}  // namespace hai
