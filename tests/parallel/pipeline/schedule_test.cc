// The builders: known programs for small shapes, and every schedule validated by the simulator for pp in
// {2, 4, 8, 16} and the micro-batch counts its rules allow.

#include <gtest/gtest.h>

#include <vector>

#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/simulator.h"

namespace hai {
namespace {

using enum InstructionKind;

Instruction work(InstructionKind kind, int stage, int microbatch) {
  return {.kind = kind, .stage = stage, .microbatch = microbatch};
}

Instruction message(InstructionKind kind, int stage, int microbatch, int peer) {
  return {.kind = kind, .stage = stage, .microbatch = microbatch, .peer = peer};
}

Instruction overlapped(int stage, int microbatch, int backward_stage, int backward_microbatch) {
  return {.kind = forward_backward, .stage = stage, .microbatch = microbatch, .backward_stage = backward_stage,
          .backward_microbatch = backward_microbatch};
}

std::vector<Instruction> compute_only(const std::vector<Instruction>& program) {
  std::vector<Instruction> compute;
  for (const Instruction& instruction : program) {
    if (is_compute(instruction.kind)) compute.push_back(instruction);
  }
  return compute;
}

// The micro-batch counts each schedule allows for `ranks`, from the smallest up.
std::vector<int> allowed_micro_batches(PipelineSchedule schedule, int ranks) {
  switch (schedule) {
    case PipelineSchedule::one_f_one_b:
      return {1, ranks - 1 > 0 ? ranks - 1 : 1, ranks, 2 * ranks + 1};
    case PipelineSchedule::dualpipe:
      return {2 * ranks, 2 * ranks + 2, 4 * ranks};
    case PipelineSchedule::dualpipev:
      return {2 * ranks, 2 * ranks + 1, 3 * ranks};
  }
  return {};
}

TEST(PipelineSchedule, OneFOneBOnTwoRanks) {
  Schedule schedule = build_schedule({.schedule = PipelineSchedule::one_f_one_b, .ranks = 2, .micro_batches = 3});
  std::vector<Instruction> first = {
      work(forward, 0, 0),       message(send_activation, 0, 0, 1),  work(forward, 0, 1),
      message(send_activation, 0, 1, 1), message(receive_gradient, 1, 0, 1), work(backward_input, 0, 0),
      work(backward_weight, 0, 0), work(forward, 0, 2),           message(send_activation, 0, 2, 1),
      message(receive_gradient, 1, 1, 1), work(backward_input, 0, 1), work(backward_weight, 0, 1),
      message(receive_gradient, 1, 2, 1), work(backward_input, 0, 2), work(backward_weight, 0, 2)};
  std::vector<Instruction> last = {
      message(receive_activation, 0, 0, 0), work(forward, 1, 0), work(backward_input, 1, 0),
      message(send_gradient, 1, 0, 0),      work(backward_weight, 1, 0), message(receive_activation, 0, 1, 0),
      work(forward, 1, 1),                  work(backward_input, 1, 1), message(send_gradient, 1, 1, 0),
      work(backward_weight, 1, 1),          message(receive_activation, 0, 2, 0), work(forward, 1, 2),
      work(backward_input, 1, 2),           message(send_gradient, 1, 2, 0), work(backward_weight, 1, 2)};
  ASSERT_EQ(schedule.ranks.size(), 2u);
  EXPECT_EQ(schedule.ranks[0], first);
  EXPECT_EQ(schedule.ranks[1], last);
}

TEST(PipelineSchedule, DualPipeOnTwoRanksOverlapsTheDirections) {
  // pp 2, 4 micro-batches: 0 and 1 flow down (chunk 0), 2 and 3 flow up (chunk 1). Rank 0 holds stage 0 for the
  // way down and stage 1 for the way up.
  Schedule schedule = build_schedule({.schedule = PipelineSchedule::dualpipe, .ranks = 2, .micro_batches = 4});
  std::vector<Instruction> rank0 = {
      work(forward, 0, 0),         work(forward, 1, 2),         work(forward, 0, 1),
      work(backward_input, 1, 2),  work(backward_weight, 1, 2), overlapped(1, 3, 0, 0),
      work(backward_input, 1, 3),  work(backward_weight, 1, 3), work(backward_input, 0, 1),
      work(backward_weight, 0, 1)};
  EXPECT_EQ(compute_only(schedule.ranks[0]), rank0);
  // Rank 1 mirrors it: its near chunk is the upward one.
  std::vector<Instruction> rank1 = {
      work(forward, 0, 2),         work(forward, 1, 0),         work(forward, 0, 3),
      work(backward_input, 1, 0),  work(backward_weight, 1, 0), overlapped(1, 1, 0, 2),
      work(backward_input, 1, 1),  work(backward_weight, 1, 1), work(backward_input, 0, 3),
      work(backward_weight, 0, 3)};
  EXPECT_EQ(compute_only(schedule.ranks[1]), rank1);
}

TEST(PipelineSchedule, DualPipeDefersWeightGradientsInTheCoolDown) {
  // pp 4, rank 1 (d = 1, n = 2; chunk 0 = stage 1, chunk 1 = stage 2): the second half of phase 6 defers the W of
  // both its B, and phase 8 runs them oldest first.
  Schedule schedule = build_schedule({.schedule = PipelineSchedule::dualpipe, .ranks = 4, .micro_batches = 8});
  std::vector<Instruction> compute = compute_only(schedule.ranks[1]);
  std::vector<Instruction> tail(compute.end() - 8, compute.end());
  std::vector<Instruction> expected = {work(backward_input, 2, 6), work(backward_weight, 2, 6),
                                       work(backward_input, 1, 2), work(backward_weight, 1, 2),
                                       work(backward_input, 2, 7), work(backward_input, 1, 3),
                                       work(backward_weight, 2, 7), work(backward_weight, 1, 3)};
  EXPECT_EQ(tail, expected);
}

TEST(PipelineSchedule, EveryBuilderValidatesForTheAllowedShapes) {
  for (PipelineSchedule kind : {PipelineSchedule::one_f_one_b, PipelineSchedule::dualpipe,
                                PipelineSchedule::dualpipev}) {
    for (int ranks : {2, 4, 8, 16}) {
      for (int micro_batches : allowed_micro_batches(kind, ranks)) {
        PipelineShape shape{.schedule = kind, .ranks = ranks, .micro_batches = micro_batches};
        Schedule schedule = build_schedule(shape);
        ASSERT_NO_THROW(simulate(schedule, StepCosts{})) << static_cast<int>(kind) << " " << ranks << " "
                                                         << micro_batches;
        ASSERT_NO_THROW(simulate(schedule, StepCosts{.communication = 0.5}));
        // Every (stage, micro-batch) of a rank has one F, one B and one W: m x chunks x 3 work items per rank,
        // FB counting for an F, a B and a W.
        for (const std::vector<Instruction>& program : schedule.ranks) {
          int items = 0;
          for (const Instruction& instruction : program) {
            items += instruction.kind == forward_backward ? 3 : is_compute(instruction.kind) ? 1 : 0;
          }
          int chunk_micro_batches = kind == PipelineSchedule::dualpipe ? micro_batches / 2 : micro_batches;
          EXPECT_EQ(items, 3 * chunk_micro_batches * chunk_count(shape));
        }
      }
    }
  }
}

}  // namespace
}  // namespace hai
