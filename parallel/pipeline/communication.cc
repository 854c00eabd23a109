#include "parallel/pipeline/communication.h"

namespace hai {
namespace {

// Appends the receive of F(stage - 1)'s output when it is made on another rank.
void receive_activation(const PipelineShape& shape, int rank, int stage, int microbatch,
                        std::vector<Instruction>& program) {
  if (stage == 0) return;
  int producer = rank_of_stage(shape, stage - 1, microbatch);
  if (producer == rank) return;
  program.push_back({.kind = InstructionKind::receive_activation, .stage = stage - 1, .microbatch = microbatch,
                     .peer = producer});
}

// Appends the receive of B(stage + 1)'s input gradient when it is made on another rank.
void receive_gradient(const PipelineShape& shape, int rank, int stage, int microbatch,
                      std::vector<Instruction>& program) {
  if (stage == stage_count(shape) - 1) return;
  int producer = rank_of_stage(shape, stage + 1, microbatch);
  if (producer == rank) return;
  program.push_back({.kind = InstructionKind::receive_gradient, .stage = stage + 1, .microbatch = microbatch,
                     .peer = producer});
}

void send_activation(const PipelineShape& shape, int rank, int stage, int microbatch,
                     std::vector<Instruction>& program) {
  if (stage == stage_count(shape) - 1) return;
  int consumer = rank_of_stage(shape, stage + 1, microbatch);
  if (consumer == rank) return;
  program.push_back({.kind = InstructionKind::send_activation, .stage = stage, .microbatch = microbatch,
                     .peer = consumer});
}

void send_gradient(const PipelineShape& shape, int rank, int stage, int microbatch,
                   std::vector<Instruction>& program) {
  if (stage == 0) return;
  int consumer = rank_of_stage(shape, stage - 1, microbatch);
  if (consumer == rank) return;
  program.push_back({.kind = InstructionKind::send_gradient, .stage = stage, .microbatch = microbatch,
                     .peer = consumer});
}

void append_with_messages(const PipelineShape& shape, int rank, const Instruction& work,
                          std::vector<Instruction>& program) {
  switch (work.kind) {
    case InstructionKind::forward:
      receive_activation(shape, rank, work.stage, work.microbatch, program);
      program.push_back(work);
      send_activation(shape, rank, work.stage, work.microbatch, program);
      return;
    case InstructionKind::backward_input:
      receive_gradient(shape, rank, work.stage, work.microbatch, program);
      program.push_back(work);
      send_gradient(shape, rank, work.stage, work.microbatch, program);
      return;
    case InstructionKind::forward_backward:
      receive_activation(shape, rank, work.stage, work.microbatch, program);
      receive_gradient(shape, rank, work.backward_stage, work.backward_microbatch, program);
      program.push_back(work);
      send_activation(shape, rank, work.stage, work.microbatch, program);
      send_gradient(shape, rank, work.backward_stage, work.backward_microbatch, program);
      return;
    default:
      program.push_back(work);
  }
}

}  // namespace

std::vector<std::vector<Instruction>> with_communication(const PipelineShape& shape,
                                                         const std::vector<std::vector<Instruction>>& compute) {
  std::vector<std::vector<Instruction>> programs(compute.size());
  for (int rank = 0; rank < static_cast<int>(compute.size()); ++rank) {
    for (const Instruction& work : compute[rank]) append_with_messages(shape, rank, work, programs[rank]);
  }
  return programs;
}

}  // namespace hai
