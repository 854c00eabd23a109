#include "model/schedule_memory.h"

#include <cstddef>

namespace hai {
namespace {

class ProgramWalk {
 public:
  explicit ProgramWalk(const StageMemoryCosts& costs) : costs_(costs) {}

  void run(const Instruction& instruction) {
    switch (instruction.kind) {
      case InstructionKind::forward: forward(instruction.stage); break;
      case InstructionKind::backward_input: backward(instruction.stage); break;
      case InstructionKind::backward_weight: break;
      case InstructionKind::forward_backward:
        forward(instruction.stage);
        backward(instruction.backward_stage);
        break;
      case InstructionKind::send_activation:
      case InstructionKind::send_gradient: ++in_flight_, --held_; break;  // kept until the drain
      case InstructionKind::receive_activation:
      case InstructionKind::receive_gradient: ++held_, observe(0, 0); break;
    }
  }

  const ScheduleMemoryPeak& peak() const { return peak_; }

 private:
  int stages() const { return static_cast<int>(costs_.saved.size()); }

  // F(stage): reads (and then releases) its input, held since F(stage - 1) or its receive, and writes its output.
  void forward(int stage) {
    saved_ += costs_.saved[static_cast<size_t>(stage)];
    bool output = stage + 1 < stages();
    observe(0, output ? 1 : 0);
    if (stage > 0) --held_;
    if (output) ++held_;
  }

  // B(stage): reads (and then releases) its output gradient, writes its input gradient; its forward's bytes go.
  void backward(int stage) {
    bool d_output = stage + 1 < stages(), d_input = stage > 0;
    observe(costs_.backward[static_cast<size_t>(stage)], d_input ? 1 : 0);
    saved_ -= costs_.saved[static_cast<size_t>(stage)];
    if (d_output) --held_;
    if (d_input) ++held_;
  }

  // The bytes now, with `backward` bytes of temporaries and `extra` boundary tensors beside what is held.
  void observe(int64_t backward, int64_t extra) {
    ScheduleMemoryPeak now{.saved = saved_, .backward = backward,
                           .buffers = (held_ + in_flight_ + extra) * costs_.boundary};
    if (now.total() > peak_.total()) peak_ = now;
  }

  const StageMemoryCosts& costs_;
  int64_t saved_ = 0, held_ = 0, in_flight_ = 0;
  ScheduleMemoryPeak peak_;
};

}  // namespace

ScheduleMemoryPeak schedule_memory_peak(const std::vector<Instruction>& program, const StageMemoryCosts& costs) {
  ProgramWalk walk(costs);
  for (const Instruction& instruction : program) walk.run(instruction);
  return walk.peak();
}

}  // namespace hai
