#include "parallel/pipeline/dualpipe.h"

#include <algorithm>
#include <array>
#include <deque>
#include <utility>

namespace hai {
namespace {

struct StageMicrobatch {
  int stage = 0;
  int microbatch = 0;
};

// The program of one rank, written phase by phase: each call appends the next forward or backward of a chunk.
class DualRankProgram {
 public:
  DualRankProgram(const PipelineShape& shape, int rank) : shape_(shape), rank_(rank) {}

  void forward(int chunk) {
    StageMicrobatch work = next(chunk, forwards_);
    program_.push_back({.kind = InstructionKind::forward, .stage = work.stage, .microbatch = work.microbatch});
  }

  // B of the chunk's oldest forward; its W follows at once unless deferred (then `weight` runs it later).
  void backward(int chunk, bool defer_weight) {
    StageMicrobatch work = next(chunk, backwards_);
    program_.push_back({.kind = InstructionKind::backward_input, .stage = work.stage, .microbatch = work.microbatch});
    if (defer_weight) {
      deferred_weights_.push_back(work);
    } else {
      append_weight(work);
    }
  }

  // The oldest deferred W.
  void weight() {
    append_weight(deferred_weights_.front());
    deferred_weights_.pop_front();
  }

  void forward_backward(int forward_chunk, int backward_chunk) {
    StageMicrobatch forward_work = next(forward_chunk, forwards_);
    StageMicrobatch backward_work = next(backward_chunk, backwards_);
    program_.push_back({.kind = InstructionKind::forward_backward, .stage = forward_work.stage,
                        .microbatch = forward_work.microbatch, .backward_stage = backward_work.stage,
                        .backward_microbatch = backward_work.microbatch});
  }

  std::vector<Instruction> take() { return std::move(program_); }

 private:
  // The next micro-batch of `chunk` by `counts` (forwards or backwards so far). DualPipe numbers the micro-batches
  // of the upward direction (chunk 1) after those of the downward one; DualPipeV sends every one through both.
  StageMicrobatch next(int chunk, std::array<int, 2>& counts) {
    int index = counts[chunk]++;
    bool upward_dualpipe = shape_.schedule == PipelineSchedule::dualpipe && chunk == 1;
    return {.stage = stage_of_chunk(shape_, rank_, chunk),
            .microbatch = upward_dualpipe ? shape_.micro_batches / 2 + index : index};
  }

  void append_weight(const StageMicrobatch& work) {
    program_.push_back({.kind = InstructionKind::backward_weight, .stage = work.stage, .microbatch = work.microbatch});
  }

  PipelineShape shape_;
  int rank_;
  std::array<int, 2> forwards_{};
  std::array<int, 2> backwards_{};
  std::deque<StageMicrobatch> deferred_weights_;
  std::vector<Instruction> program_;
};

// The quantities of dualpipe.h: n, d, h and the near and far chunks of a rank.
struct DualRankPlan {
  int half_ranks = 0;           // n
  int distance = 0;             // d
  int chunk_micro_batches = 0;  // h
  int near = 0;                 // N
  int far = 1;                  // R
};

DualRankPlan dual_rank_plan(const PipelineShape& shape, int rank) {
  if (shape.schedule == PipelineSchedule::dualpipev) {
    return {.half_ranks = shape.ranks, .distance = rank, .chunk_micro_batches = shape.micro_batches};
  }
  bool upper_half = rank >= shape.ranks / 2;
  return {.half_ranks = shape.ranks / 2, .distance = std::min(rank, shape.ranks - 1 - rank),
          .chunk_micro_batches = shape.micro_batches / 2, .near = upper_half ? 1 : 0, .far = upper_half ? 0 : 1};
}

void warm_up(const DualRankPlan& plan, DualRankProgram& program) {
  const int n = plan.half_ranks, d = plan.distance;
  for (int i = 0; i < 2 * (n - d - 1); ++i) program.forward(plan.near);        // phase 1
  for (int i = 0; i < d + 1; ++i) {                                             // phase 2
    program.forward(plan.near);
    program.forward(plan.far);
  }
  for (int i = 0; i < n - d - 1; ++i) {                                         // phase 3
    program.backward(plan.far, /*defer_weight=*/true);
    program.weight();
    program.forward(plan.far);
  }
}

void steady_state(const DualRankPlan& plan, DualRankProgram& program) {
  const int n = plan.half_ranks, d = plan.distance;
  for (int i = 0; i < plan.chunk_micro_batches - 2 * n + d + 1; ++i) {         // phase 4
    // NOTE: the rank at the turn (d = n-1) keeps its first pair apart: its F feeds the other direction's first B.
    if (i == 0 && d == n - 1) {
      program.forward(plan.near);
      program.backward(plan.far, /*defer_weight=*/false);
    } else {
      program.forward_backward(plan.near, plan.far);
    }
    program.forward_backward(plan.far, plan.near);
  }
  for (int i = 0; i < n - d - 1; ++i) {                                         // phase 5
    program.backward(plan.far, /*defer_weight=*/false);
    program.forward_backward(plan.far, plan.near);
  }
}

void cool_down(const DualRankPlan& plan, DualRankProgram& program) {
  const int n = plan.half_ranks, d = plan.distance;
  const int steps = d + 1, middle = steps / 2;
  bool defer = false;
  for (int i = 0; i < steps; ++i) {                                             // phase 6
    if (i == middle && d % 2 == 1) defer = true;
    program.backward(plan.far, defer);
    if (i == middle && d % 2 == 0) defer = true;
    program.backward(plan.near, defer);
  }
  for (int i = 0; i < n - d - 1; ++i) {                                         // phase 7
    program.weight();
    program.backward(plan.near, /*defer_weight=*/true);
  }
  for (int i = 0; i < d + 1; ++i) program.weight();                             // phase 8
}

}  // namespace

std::vector<Instruction> dualpipe_compute(const PipelineShape& shape, int rank) {
  DualRankPlan plan = dual_rank_plan(shape, rank);
  DualRankProgram program(shape, rank);
  warm_up(plan, program);
  steady_state(plan, program);
  cool_down(plan, program);
  return program.take();
}

}  // namespace hai
