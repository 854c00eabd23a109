#include "parallel/pipeline/instruction.h"

#include <fmt/format.h>

namespace hai {

bool is_compute(InstructionKind kind) {
  return kind == InstructionKind::forward || kind == InstructionKind::backward_input ||
         kind == InstructionKind::backward_weight || kind == InstructionKind::forward_backward;
}

std::string_view kind_name(InstructionKind kind) {
  switch (kind) {
    case InstructionKind::forward:
      return "F";
    case InstructionKind::backward_input:
      return "B";
    case InstructionKind::backward_weight:
      return "W";
    case InstructionKind::forward_backward:
      return "FB";
    case InstructionKind::send_activation:
      return "SEND_F";
    case InstructionKind::receive_activation:
      return "RECV_F";
    case InstructionKind::send_gradient:
      return "SEND_B";
    case InstructionKind::receive_gradient:
      return "RECV_B";
  }
  return "?";
}

std::string describe(const Instruction& instruction) {
  const Instruction& i = instruction;
  switch (i.kind) {
    case InstructionKind::forward_backward:
      return fmt::format("FB(F stage {} micro-batch {}, B stage {} micro-batch {})", i.stage, i.microbatch,
                         i.backward_stage, i.backward_microbatch);
    case InstructionKind::send_activation:
    case InstructionKind::send_gradient:
      return fmt::format("{}(stage {}, micro-batch {}) to rank {}", kind_name(i.kind), i.stage, i.microbatch, i.peer);
    case InstructionKind::receive_activation:
    case InstructionKind::receive_gradient:
      return fmt::format("{}(stage {}, micro-batch {}) from rank {}", kind_name(i.kind), i.stage, i.microbatch,
                         i.peer);
    default:
      return fmt::format("{}(stage {}, micro-batch {})", kind_name(i.kind), i.stage, i.microbatch);
  }
}

}  // namespace hai
