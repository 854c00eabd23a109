#include "parallel/pipeline/one_f_one_b.h"

#include <algorithm>

namespace hai {
namespace {

void append_full_backward(int stage, int microbatch, std::vector<Instruction>& program) {
  program.push_back({.kind = InstructionKind::backward_input, .stage = stage, .microbatch = microbatch});
  program.push_back({.kind = InstructionKind::backward_weight, .stage = stage, .microbatch = microbatch});
}

}  // namespace

std::vector<Instruction> one_f_one_b_compute(const PipelineShape& shape, int rank) {
  const int micro_batches = shape.micro_batches;
  const int warm_up = std::min(shape.ranks - 1 - rank, micro_batches);
  std::vector<Instruction> program;
  for (int microbatch = 0; microbatch < warm_up; ++microbatch) {
    program.push_back({.kind = InstructionKind::forward, .stage = rank, .microbatch = microbatch});
  }
  for (int oldest = 0; oldest < micro_batches; ++oldest) {
    int next_forward = oldest + warm_up;
    if (next_forward < micro_batches) {
      program.push_back({.kind = InstructionKind::forward, .stage = rank, .microbatch = next_forward});
    }
    append_full_backward(rank, oldest, program);
  }
  return program;
}

}  // namespace hai
