#include "parallel/pipeline/rank_ledger.h"

#include <algorithm>

#include <fmt/format.h>

#include "framework/core/error.h"

namespace hai {
namespace {

bool is_send(InstructionKind kind) {
  return kind == InstructionKind::send_activation || kind == InstructionKind::send_gradient;
}

bool carries_activation(InstructionKind kind) {
  return kind == InstructionKind::send_activation || kind == InstructionKind::receive_activation;
}

}  // namespace

RankLedger::RankLedger(const PipelineShape& shape, int rank)
    : shape_(shape), rank_(rank), stages_(stage_count(shape)) {
  std::size_t size = static_cast<std::size_t>(stages_) * shape.micro_batches;
  for (auto* done : {&forward_done_, &backward_done_, &weight_done_, &activation_sent_, &gradient_sent_,
                     &activation_received_, &gradient_received_}) {
    done->assign(size, 0);
  }
}

std::size_t RankLedger::index(int stage, int microbatch) const {
  return static_cast<std::size_t>(stage) * shape_.micro_batches + microbatch;
}

std::string RankLedger::placement_problem(int stage, int microbatch) const {
  if (stage < 0 || stage >= stages_ || microbatch < 0 || microbatch >= shape_.micro_batches) {
    return fmt::format("there are {} stages and {} micro-batches", stages_, shape_.micro_batches);
  }
  int owner = rank_of_stage(shape_, stage, microbatch);
  if (owner != rank_) return fmt::format("stage {} of micro-batch {} runs on rank {}", stage, microbatch, owner);
  return "";
}

// The input of F(stage) is the output of F(stage - 1): received, or made here when that stage is here too.
std::string RankLedger::forward_problem(int stage, int microbatch) const {
  if (std::string where = placement_problem(stage, microbatch); !where.empty()) return where;
  if (forward_done_[index(stage, microbatch)]) return "this forward already ran";
  if (stage == 0) return "";
  bool previous_here = rank_of_stage(shape_, stage - 1, microbatch) == rank_;
  bool input_here = previous_here ? forward_done_[index(stage - 1, microbatch)]
                                  : activation_received_[index(stage - 1, microbatch)];
  if (input_here) return "";
  return previous_here ? fmt::format("F of stage {} has not run on this rank yet", stage - 1)
                       : fmt::format("its input, the output of stage {}, has not been received", stage - 1);
}

// B(stage) needs F(stage) and the input gradient of B(stage + 1): received, or made here.
std::string RankLedger::backward_problem(int stage, int microbatch) const {
  if (std::string where = placement_problem(stage, microbatch); !where.empty()) return where;
  if (!forward_done_[index(stage, microbatch)]) return "its forward has not run";
  if (backward_done_[index(stage, microbatch)]) return "this backward already ran";
  if (stage == stages_ - 1) return "";
  bool next_here = rank_of_stage(shape_, stage + 1, microbatch) == rank_;
  bool gradient_here = next_here ? backward_done_[index(stage + 1, microbatch)]
                                 : gradient_received_[index(stage + 1, microbatch)];
  if (gradient_here) return "";
  return next_here ? fmt::format("B of stage {} has not run on this rank yet", stage + 1)
                   : fmt::format("its output gradient, from stage {}, has not been received", stage + 1);
}

std::string RankLedger::weight_problem(int stage, int microbatch) const {
  if (std::string where = placement_problem(stage, microbatch); !where.empty()) return where;
  if (!backward_done_[index(stage, microbatch)]) return "its input gradient B has not run";
  if (weight_done_[index(stage, microbatch)]) return "this weight gradient already ran";
  return "";
}

// A message of stage s travels between the rank of s and the rank of its neighbour on the micro-batch's way
// (s + 1 for activations, s - 1 for gradients); a send follows the work that made it.
std::string RankLedger::message_problem(const Instruction& instruction) const {
  const int stage = instruction.stage, microbatch = instruction.microbatch;
  const bool activation = carries_activation(instruction.kind);
  const int neighbour = activation ? stage + 1 : stage - 1;
  if (stage < 0 || stage >= stages_ || neighbour < 0 || neighbour >= stages_ || microbatch < 0 ||
      microbatch >= shape_.micro_batches) {
    return fmt::format("no such message: there are {} stages and {} micro-batches", stages_, shape_.micro_batches);
  }
  const int producer = rank_of_stage(shape_, stage, microbatch), consumer = rank_of_stage(shape_, neighbour, microbatch);
  const bool send = is_send(instruction.kind);
  const int expected_self = send ? producer : consumer, expected_peer = send ? consumer : producer;
  if (expected_self != rank_ || expected_peer != instruction.peer || producer == consumer) {
    return fmt::format("it travels from rank {} to rank {}", producer, consumer);
  }
  const std::size_t at = index(stage, microbatch);
  if (send) {
    if (!(activation ? forward_done_[at] : backward_done_[at])) return "the work that makes it has not run";
    if (activation ? activation_sent_[at] : gradient_sent_[at]) return "it was already sent";
    return "";
  }
  if (activation ? activation_received_[at] : gradient_received_[at]) return "it was already received";
  return "";
}

std::string RankLedger::problem(const Instruction& instruction) const {
  switch (instruction.kind) {
    case InstructionKind::forward:
      return forward_problem(instruction.stage, instruction.microbatch);
    case InstructionKind::backward_input:
      return backward_problem(instruction.stage, instruction.microbatch);
    case InstructionKind::backward_weight:
      return weight_problem(instruction.stage, instruction.microbatch);
    case InstructionKind::forward_backward: {
      std::string forward = forward_problem(instruction.stage, instruction.microbatch);
      if (!forward.empty()) return "its F: " + forward;
      std::string backward = backward_problem(instruction.backward_stage, instruction.backward_microbatch);
      return backward.empty() ? "" : "its B: " + backward;
    }
    default:
      return message_problem(instruction);
  }
}

void RankLedger::check(int step, const Instruction& instruction) const {
  std::string what = problem(instruction);
  if (!what.empty()) HAI_THROW("pipeline rank {}, step {}, {}: {}", rank_, step, describe(instruction), what);
}

void RankLedger::record(const Instruction& instruction) {
  const std::size_t at = index(instruction.stage, instruction.microbatch);
  switch (instruction.kind) {
    case InstructionKind::forward:
      forward_done_[at] = 1;
      peak_activations_ = std::max(peak_activations_, ++live_activations_);
      return;
    case InstructionKind::backward_input:
      backward_done_[at] = 1;
      --live_activations_;
      return;
    case InstructionKind::backward_weight:
      weight_done_[at] = 1;
      return;
    case InstructionKind::forward_backward: {
      // NOTE: the overlapped pair holds the F's new activations and the B's old ones at the same time.
      forward_done_[at] = 1;
      peak_activations_ = std::max(peak_activations_, ++live_activations_);
      const std::size_t backward_at = index(instruction.backward_stage, instruction.backward_microbatch);
      backward_done_[backward_at] = weight_done_[backward_at] = 1;
      --live_activations_;
      return;
    }
    case InstructionKind::send_activation:
      activation_sent_[at] = 1;
      return;
    case InstructionKind::send_gradient:
      gradient_sent_[at] = 1;
      return;
    case InstructionKind::receive_activation:
      activation_received_[at] = 1;
      return;
    case InstructionKind::receive_gradient:
      gradient_received_[at] = 1;
      return;
  }
}

void RankLedger::check_complete() const {
  for (int stage = 0; stage < stages_; ++stage) {
    for (int microbatch = 0; microbatch < shape_.micro_batches; ++microbatch) {
      if (rank_of_stage(shape_, stage, microbatch) != rank_) continue;
      const std::size_t at = index(stage, microbatch);
      const char* missing = !forward_done_[at] ? "F" : !backward_done_[at] ? "B" : !weight_done_[at] ? "W" : nullptr;
      if (missing != nullptr) {
        HAI_THROW("pipeline rank {} never runs {}(stage {}, micro-batch {})", rank_, missing, stage, microbatch);
      }
    }
  }
}

}  // namespace hai
