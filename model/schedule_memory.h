#pragma once
// The activation-side peak of one pipeline rank, from its program (parallel/pipeline/schedule.h) as the engine runs
// it (parallel/pipeline/engine.cc): walking its instructions, the bytes live at each point are what the forwards of
// the (stage, micro-batch) pairs not yet through their B keep, the stage-boundary tensors the engine holds (outputs
// and input gradients until they are used or sent, received ones until used, and every posted send until the
// drain), and during a B the backward temporaries of its stage and its input-gradient buffer. The peak is the
// largest of them, split into those kinds.

#include <cstdint>
#include <vector>

#include "parallel/pipeline/instruction.h"

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

// The peak over `program` (one pipeline rank's instructions).
ScheduleMemoryPeak schedule_memory_peak(const std::vector<Instruction>& program, const StageMemoryCosts& costs);

}  // namespace hai
