#include "model/schedule_memory.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <tuple>


namespace hai {
namespace {

bool is_send(InstructionKind kind) {
  return kind == InstructionKind::send_activation || kind == InstructionKind::send_gradient;
}

bool is_receive(InstructionKind kind) {
  return kind == InstructionKind::receive_activation || kind == InstructionKind::receive_gradient;
}

// A message: (activation?, stage, micro-batch), as sends and receives name it.
using MessageKey = std::tuple<bool, int, int>;

MessageKey message_key(const Instruction& instruction) {
  bool activation = instruction.kind == InstructionKind::send_activation ||
                    instruction.kind == InstructionKind::receive_activation;
  return {activation, instruction.stage, instruction.microbatch};
}

// By rank and step: for a send, the step before which the engine surely finds it complete (the program's size: only
// at the drain); 0 for other steps. Surely: the sender has learnt that the receiver took the message, from a message
// it received since that left the receiver (or a rank the receiver told) after the receive: vector clocks over the
// schedule's messages, so the bound holds however long each instruction takes.
std::vector<std::vector<size_t>> send_release_steps(const Schedule& schedule) {
  const size_t ranks = schedule.ranks.size();
  using Clock = std::vector<size_t>;  // by rank: how many of its steps this rank knows to have run
  std::vector<Clock> clock(ranks, Clock(ranks, 0));
  std::vector<size_t> next(ranks, 0);
  std::map<MessageKey, Clock> sent;                     // each message's clock when it was sent
  std::map<MessageKey, std::pair<size_t, size_t>> taken;  // each message's receiver and its receive's step
  // NOTE: any order that runs a receive after its send gives the same clocks; here each rank runs until it waits.
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t rank = 0; rank < ranks; ++rank) {
      const std::vector<Instruction>& program = schedule.ranks[rank];
      for (; next[rank] < program.size(); ++next[rank], moved = true) {
        const Instruction& instruction = program[next[rank]];
        if (is_receive(instruction.kind)) {
          auto message = sent.find(message_key(instruction));
          if (message == sent.end()) break;
          for (size_t other = 0; other < ranks; ++other) {
            clock[rank][other] = std::max(clock[rank][other], message->second[other]);
          }
          taken[message_key(instruction)] = {rank, next[rank]};
        }
        clock[rank][rank] = next[rank] + 1;
        if (is_send(instruction.kind)) sent[message_key(instruction)] = clock[rank];
      }
    }
  }
  // Each rank's program again, its clock step by step: a send is released before the first step at which the
  // clock covers its receive.
  std::vector<std::vector<size_t>> release(ranks);
  for (size_t rank = 0; rank < ranks; ++rank) {
    const std::vector<Instruction>& program = schedule.ranks[rank];
    release[rank].assign(program.size(), 0);
    Clock known(ranks, 0);
    std::vector<size_t> waiting;  // the steps of the sends not yet known taken
    for (size_t step = 0; step < program.size(); ++step) {
      std::erase_if(waiting, [&](size_t send) {
        auto [receiver, receive] = taken.at(message_key(program[send]));
        if (known[receiver] <= receive) return false;
        release[rank][send] = step;
        return true;
      });
      const Instruction& instruction = program[step];
      if (is_receive(instruction.kind)) {
        const Clock& carried = sent.at(message_key(instruction));
        for (size_t other = 0; other < ranks; ++other) known[other] = std::max(known[other], carried[other]);
      }
      known[rank] = step + 1;
      if (is_send(instruction.kind)) waiting.push_back(step);
    }
    for (size_t send : waiting) release[rank][send] = program.size();
  }
  return release;
}

class ProgramWalk {
 public:
  explicit ProgramWalk(const StageMemoryCosts& costs) : costs_(costs) {}

  // Runs `instruction`, the program's step `step`; a send is held until before step `released`.
  void run(size_t step, const Instruction& instruction, size_t released) {
    std::erase_if(in_flight_, [step](size_t release) { return release <= step; });
    switch (instruction.kind) {
      case InstructionKind::forward: forward(instruction.stage); break;
      case InstructionKind::backward_input: backward(instruction.stage); break;
      case InstructionKind::backward_weight: break;
      case InstructionKind::forward_backward:
        forward(instruction.stage);
        backward(instruction.backward_stage);
        break;
      case InstructionKind::send_activation:
      case InstructionKind::send_gradient: in_flight_.push_back(released), --held_; break;
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
    auto in_flight = static_cast<int64_t>(in_flight_.size());
    ScheduleMemoryPeak now{.saved = saved_, .backward = backward,
                           .buffers = (held_ + in_flight + extra) * costs_.boundary};
    if (now.total() > peak_.total()) peak_ = now;
  }

  const StageMemoryCosts& costs_;
  int64_t saved_ = 0, held_ = 0;
  std::vector<size_t> in_flight_;  // the posted sends not yet seen complete: the step before which each goes
  ScheduleMemoryPeak peak_;
};

}  // namespace

std::vector<ScheduleMemoryPeak> schedule_memory_peaks(const Schedule& schedule, const StageMemoryCosts& costs) {
  std::vector<std::vector<size_t>> release = send_release_steps(schedule);
  std::vector<ScheduleMemoryPeak> peaks;
  for (size_t rank = 0; rank < schedule.ranks.size(); ++rank) {
    ProgramWalk walk(costs);
    const std::vector<Instruction>& program = schedule.ranks[rank];
    for (size_t step = 0; step < program.size(); ++step) walk.run(step, program[step], release[rank][step]);
    peaks.push_back(walk.peak());
  }
  return peaks;
}

}  // namespace hai
