#pragma once
// One step of a rank's pipeline program (docs/architecture.md "Pipeline: schedules are data"). A schedule is one list
// of instructions per pipeline rank; the engine runs a list in order with no schedule-specific branches.
// Stages are model stages (placement.h); a message names the stage that produced it: RECV_F of stage s carries
// the output of F(s) into stage s+1, RECV_B of stage s the input gradient of B(s) into stage s-1.

#include <string>
#include <string_view>

namespace hai {

enum class InstructionKind {
  forward,             // F: the forward of (stage, microbatch); keeps its activations until its B
  backward_input,      // B: the input gradient (dgrad) of (stage, microbatch), after its F
  backward_weight,     // W: the weight gradient (wgrad) of (stage, microbatch), after its B
  forward_backward,    // FB: F of (stage, microbatch) overlapped with B and W of (backward_stage, backward_microbatch)
  send_activation,     // SEND_F: the output of F(stage, microbatch) to `peer`
  receive_activation,  // RECV_F: the output of F(stage, microbatch) from `peer`
  send_gradient,       // SEND_B: the input gradient of B(stage, microbatch) to `peer`
  receive_gradient,    // RECV_B: the input gradient of B(stage, microbatch) from `peer`
};

struct Instruction {
  InstructionKind kind = InstructionKind::forward;
  int stage = 0;
  int microbatch = 0;
  int peer = -1;                 // sends and receives: the other pipeline rank
  int backward_stage = -1;       // forward_backward only
  int backward_microbatch = -1;  // forward_backward only

  bool operator==(const Instruction&) const = default;
};

// F, B, W and FB; the others move data.
bool is_compute(InstructionKind kind);

// "F", "B", "W", "FB", "SEND_F", "RECV_F", "SEND_B", "RECV_B".
std::string_view kind_name(InstructionKind kind);

// For messages: "RECV_F(stage 1, micro-batch 3) from rank 1"; for compute: "F(stage 2, micro-batch 3)",
// "FB(F stage 2 micro-batch 5, B stage 1 micro-batch 0)".
std::string describe(const Instruction& instruction);

}  // namespace hai
