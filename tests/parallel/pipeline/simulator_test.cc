// The simulator against the formula table of docs/deepseek-v3.md "DualPipe" (bubble and peak activations),
// and the validator catching broken schedules with a message naming the rank, the step and the instruction. Every
// builder's schedule simulated here also passes the channel-order check (messages of a kind between two ranks
// received in the order sent).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "framework/core/error.h"
#include "parallel/pipeline/reference_figures.h"
#include "parallel/pipeline/simulator.h"

namespace hai {
namespace {

using enum InstructionKind;

// Costs with the input-gradient part B - W equal to F, and F&B = F + B - overlap_gain.
StepCosts dual_costs(double forward, double weight, double overlap_gain) {
  return {.forward = forward, .backward = forward + weight, .weight = weight,
          .forward_backward = 2 * forward + weight - overlap_gain, .communication = 0};
}

std::string simulation_error(const Schedule& schedule) {
  try {
    simulate(schedule, StepCosts{});
  } catch (const Error& error) {
    return error.message();
  }
  return "";
}

// The step of the first instruction of `rank` that equals `instruction`.
int step_of(const Schedule& schedule, int rank, const Instruction& instruction) {
  const std::vector<Instruction>& program = schedule.ranks[rank];
  return static_cast<int>(std::find(program.begin(), program.end(), instruction) - program.begin());
}

Schedule one_f_one_b(int ranks, int micro_batches) {
  return build_schedule({.schedule = PipelineSchedule::one_f_one_b, .ranks = ranks, .micro_batches = micro_batches});
}

TEST(PipelineSimulator, OneFOneBBubbleIsTheFormulaWithoutWAndShorterWithIt) {
  for (int ranks : {2, 4, 8, 16}) {
    for (int micro_batches : {ranks, 2 * ranks + 1}) {
      Schedule schedule = one_f_one_b(ranks, micro_batches);
      for (StepCosts costs : {StepCosts{.forward = 1, .backward = 2, .weight = 0},
                              StepCosts{.forward = 2, .backward = 3, .weight = 0}}) {
        Simulation simulation = simulate(schedule, costs);
        double formula = reference_figures(schedule.shape, costs).bubble;
        EXPECT_EQ(formula, (ranks - 1) * (costs.forward + costs.backward));
        EXPECT_DOUBLE_EQ(simulation.makespan, micro_batches * (costs.forward + costs.backward) + formula);
        for (const RankSimulation& rank : simulation.ranks) EXPECT_DOUBLE_EQ(rank.bubble, formula);
      }
      // With W = 1 the input gradient leaves before W runs: (PP-1)(F+B-W) = (PP-1) x 2.
      for (const RankSimulation& rank : simulate(schedule, StepCosts{}).ranks) {
        EXPECT_DOUBLE_EQ(rank.bubble, (ranks - 1) * 2.0);
      }
    }
  }
}

TEST(PipelineSimulator, OneMicroBatchCrossesEveryHopTwice) {
  // F on every rank, then B on every rank back: P (F + B) + 2 (P - 1) messages.
  Simulation simulation = simulate(one_f_one_b(4, 1), {.forward = 1, .backward = 2, .weight = 0,
                                                       .communication = 0.25});
  EXPECT_DOUBLE_EQ(simulation.makespan, 4 * 3 + 6 * 0.25);
  for (const RankSimulation& rank : simulation.ranks) EXPECT_DOUBLE_EQ(rank.bubble, 3 * 3 + 6 * 0.25);
}

// Each rank's own costs: the first rank waits for the heavier second's F and B (F 1 + F 3 + B 4 + B 2 = 10).
TEST(PipelineSimulator, EachRankRunsAtItsOwnCosts) {
  std::vector<StepCosts> costs = {{.forward = 1, .backward = 2, .weight = 0, .forward_backward = 3},
                                  {.forward = 3, .backward = 4, .weight = 0, .forward_backward = 7}};
  Simulation simulation = simulate_per_rank(one_f_one_b(2, 1), costs);
  EXPECT_DOUBLE_EQ(simulation.makespan, 10.0);
  EXPECT_DOUBLE_EQ(simulation.ranks[0].busy, 3.0);
  EXPECT_DOUBLE_EQ(simulation.ranks[0].bubble, 7.0);
  EXPECT_DOUBLE_EQ(simulation.ranks[1].busy, 7.0);
  EXPECT_DOUBLE_EQ(simulation.ranks[1].bubble, 3.0);
  EXPECT_THROW(simulate_per_rank(one_f_one_b(2, 1), {costs[0]}), Error);  // one cost per rank
}

TEST(PipelineSimulator, OneFOneBHoldsPpActivationsOnTheFirstRank) {
  Simulation simulation = simulate(one_f_one_b(8, 20), StepCosts{});
  for (int rank = 0; rank < 8; ++rank) EXPECT_EQ(simulation.ranks[rank].peak_activations, 8 - rank);
  EXPECT_EQ(reference_figures({.schedule = PipelineSchedule::one_f_one_b, .ranks = 8, .micro_batches = 20},
                              StepCosts{}).activations, 8);
  // Fewer micro-batches than ranks: the first rank holds them all.
  EXPECT_EQ(simulate(one_f_one_b(8, 3), StepCosts{}).ranks[0].peak_activations, 3);
}

// The formula holds exactly where the input gradient costs as much as the forward and W is either as long (the
// zero-bubble convention F = B_input = W) or free: without overlap (F&B = F + B) on every rank, with overlap on the
// rank that waits most.
TEST(PipelineSimulator, DualPipeAndDualPipeVBubblesMatchTheFormula) {
  for (PipelineSchedule kind : {PipelineSchedule::dualpipe, PipelineSchedule::dualpipev}) {
    for (int ranks : {2, 4, 8, 16}) {
      PipelineShape shape{.schedule = kind, .ranks = ranks, .micro_batches = 2 * ranks + 2};
      Schedule schedule = build_schedule(shape);
      // PP in the formula counts stages: pp for dualpipe, 2 pp for dualpipev.
      const int stages = kind == PipelineSchedule::dualpipe ? ranks : 2 * ranks;
      for (auto [forward, weight] : {std::pair{1.0, 1.0}, {1.0, 0.0}, {2.0, 2.0}, {2.0, 0.0}, {3.0, 3.0}}) {
        for (double overlap_gain : {0.0, 0.5}) {
          StepCosts costs = dual_costs(forward, weight, overlap_gain);
          Simulation simulation = simulate(schedule, costs);
          double formula = (stages / 2 - 1) * (costs.forward_backward + costs.backward - 3 * costs.weight);
          EXPECT_DOUBLE_EQ(reference_figures(shape, costs).bubble, formula);
          double largest = 0;
          for (const RankSimulation& rank : simulation.ranks) {
            if (overlap_gain == 0) {
              EXPECT_DOUBLE_EQ(rank.bubble, formula);
            }
            largest = std::max(largest, rank.bubble);
          }
          EXPECT_DOUBLE_EQ(largest, formula) << static_cast<int>(kind) << " pp " << ranks << " F " << forward
                                             << " W " << weight << " overlap gain " << overlap_gain;
        }
      }
      // Every rank's work without overlap: each of its two chunks runs F + B for each of its micro-batches.
      int chunk_micro_batches = kind == PipelineSchedule::dualpipe ? shape.micro_batches / 2 : shape.micro_batches;
      EXPECT_DOUBLE_EQ(simulate(schedule, dual_costs(1, 1, 0)).ranks[0].busy, 2 * chunk_micro_batches * 3.0);
    }
  }
}

TEST(PipelineSimulator, DualPipeFormulaIsAnApproximationForOtherCostRatios) {
  // F = 2, B_input = 1, W = 1 on 8 ranks: the formula says 3 x (4 + 2 - 3) = 9, the schedule waits 12.
  Schedule schedule = build_schedule({.schedule = PipelineSchedule::dualpipe, .ranks = 8, .micro_batches = 32});
  StepCosts costs{.forward = 2, .backward = 2, .weight = 1, .forward_backward = 4};
  EXPECT_DOUBLE_EQ(reference_figures(schedule.shape, costs).bubble, 9);
  for (const RankSimulation& rank : simulate(schedule, costs).ranks) EXPECT_DOUBLE_EQ(rank.bubble, 12);
}

TEST(PipelineSimulator, DualPipeAndDualPipeVHoldPpPlusOneActivationsOnEveryRank) {
  for (PipelineSchedule kind : {PipelineSchedule::dualpipe, PipelineSchedule::dualpipev}) {
    for (int ranks : {2, 4, 8, 16}) {
      PipelineShape shape{.schedule = kind, .ranks = ranks, .micro_batches = 4 * ranks};
      Simulation simulation = simulate(build_schedule(shape), StepCosts{});
      int stages = stage_count(shape);
      EXPECT_EQ(reference_figures(shape, StepCosts{}).activations, stages + 1);
      for (const RankSimulation& rank : simulation.ranks) EXPECT_EQ(rank.peak_activations, stages + 1);
    }
  }
}

TEST(PipelineSimulator, OverlapShortensTheDualPipeStep) {
  // F&B below F + B: the steady state gains, the makespan drops below the no-overlap one.
  Schedule schedule = build_schedule({.schedule = PipelineSchedule::dualpipe, .ranks = 8, .micro_batches = 20});
  EXPECT_LT(simulate(schedule, dual_costs(1, 1, 0.5)).makespan, simulate(schedule, dual_costs(1, 1, 0)).makespan);
}

TEST(PipelineValidator, ADroppedReceiveIsCaughtAtTheWorkThatNeedsIt) {
  Schedule schedule = one_f_one_b(4, 8);
  std::vector<Instruction>& rank2 = schedule.ranks[2];
  ASSERT_EQ(rank2[0], (Instruction{.kind = receive_activation, .stage = 1, .microbatch = 0, .peer = 1}));
  rank2.erase(rank2.begin());
  EXPECT_EQ(simulation_error(schedule),
            "pipeline rank 2, step 0, F(stage 2, micro-batch 0): its input, the output of stage 1, has not been "
            "received");
}

TEST(PipelineValidator, ABackwardBeforeItsForwardIsCaught) {
  Schedule schedule = one_f_one_b(4, 8);
  std::vector<Instruction>& last = schedule.ranks[3];  // RECV_F, F0, B0, SEND_B, W0, ...
  std::swap(last[1], last[2]);
  EXPECT_EQ(simulation_error(schedule), "pipeline rank 3, step 1, B(stage 3, micro-batch 0): its forward has not run");
}

TEST(PipelineValidator, AWeightGradientBeforeItsBackwardIsCaught) {
  Schedule schedule = build_schedule({.schedule = PipelineSchedule::dualpipe, .ranks = 4, .micro_batches = 8});
  Instruction backward{.kind = backward_input, .stage = 2, .microbatch = 7};
  Instruction weight{.kind = backward_weight, .stage = 2, .microbatch = 7};
  std::vector<Instruction>& rank1 = schedule.ranks[1];
  int backward_step = step_of(schedule, 1, backward), weight_step = step_of(schedule, 1, weight);
  ASSERT_LT(backward_step, weight_step);
  std::swap(rank1[backward_step], rank1[weight_step]);
  EXPECT_EQ(simulation_error(schedule), fmt::format("pipeline rank 1, step {}, W(stage 2, micro-batch 7): its input "
                                                    "gradient B has not run", backward_step));
}

TEST(PipelineValidator, ReceivingBeforeSendingDeadlocksAndNamesEveryWaitingRank) {
  // Rank 0 waits for the gradient of micro-batch 0 before it sends micro-batch 0's activation.
  Schedule schedule = one_f_one_b(2, 2);
  std::vector<Instruction>& rank0 = schedule.ranks[0];  // F0, SEND_F0, F1, SEND_F1, RECV_B0, ...
  ASSERT_EQ(rank0[4].kind, receive_gradient);
  std::rotate(rank0.begin() + 1, rank0.begin() + 4, rank0.begin() + 5);
  EXPECT_EQ(simulation_error(schedule),
            "the pipeline schedule deadlocks; pipeline rank 0, step 1, RECV_B(stage 1, micro-batch 0) from rank 1 "
            "waits for a message never sent; pipeline rank 1, step 0, RECV_F(stage 0, micro-batch 0) from rank 0 "
            "waits for a message never sent");
}

TEST(PipelineValidator, ReceivingActivationsInAnotherOrderThanSentIsCaught) {
  // Rank 0 sends micro-batch 0's activation, then micro-batch 1's; rank 1 takes micro-batch 1's first.
  Schedule schedule = one_f_one_b(2, 2);
  std::vector<Instruction>& rank1 = schedule.ranks[1];
  Instruction second{.kind = receive_activation, .stage = 0, .microbatch = 1, .peer = 0};
  int second_step = step_of(schedule, 1, second);
  ASSERT_LT(second_step, static_cast<int>(rank1.size()));
  rank1.erase(rank1.begin() + second_step);
  rank1.insert(rank1.begin(), second);
  EXPECT_EQ(simulation_error(schedule),
            "pipeline rank 1, step 0, RECV_F(stage 0, micro-batch 1) from rank 0: rank 0 sent another message on "
            "this channel before it, of stage 0 for micro-batch 0, so a transport that matches messages in order "
            "would mix them up");
}

TEST(PipelineValidator, AMessageToTheWrongRankIsCaught) {
  Schedule schedule = one_f_one_b(4, 4);
  schedule.ranks[0][1].peer = 2;  // SEND_F(stage 0, micro-batch 0) belongs to rank 1
  EXPECT_EQ(simulation_error(schedule),
            "pipeline rank 0, step 1, SEND_F(stage 0, micro-batch 0) to rank 2: it travels from rank 0 to rank 1");
}

TEST(PipelineValidator, WorkOnAnotherRanksStageIsCaught) {
  Schedule schedule = one_f_one_b(2, 2);
  schedule.ranks[0][0].stage = 1;
  EXPECT_EQ(simulation_error(schedule),
            "pipeline rank 0, step 0, F(stage 1, micro-batch 0): stage 1 of micro-batch 0 runs on rank 1");
}

TEST(PipelineValidator, RepeatedWorkIsCaught) {
  Schedule schedule = one_f_one_b(2, 2);
  schedule.ranks[1].insert(schedule.ranks[1].begin() + 2, schedule.ranks[1][1]);  // F0 twice
  EXPECT_EQ(simulation_error(schedule), "pipeline rank 1, step 2, F(stage 1, micro-batch 0): this forward already ran");
}

TEST(PipelineValidator, AMissingWeightGradientIsCaught) {
  Schedule schedule = one_f_one_b(2, 2);
  std::vector<Instruction>& rank1 = schedule.ranks[1];
  rank1.erase(rank1.begin() + step_of(schedule, 1, {.kind = backward_weight, .stage = 1, .microbatch = 1}));
  EXPECT_EQ(simulation_error(schedule), "pipeline rank 1 never runs W(stage 1, micro-batch 1)");
}

TEST(PipelineValidator, AnUnreceivedMessageIsCaught) {
  // Rank 1 of a one-micro-batch pipeline never takes the activation: it runs nothing at all.
  Schedule schedule = one_f_one_b(2, 1);
  schedule.ranks[0].resize(2);  // F0, SEND_F0: no gradient to wait for
  schedule.ranks[1].clear();
  EXPECT_EQ(simulation_error(schedule), "pipeline rank 0, step 1, SEND_F(stage 0, micro-batch 0) to rank 1: never "
                                        "received");
}

TEST(PipelineValidator, BadCostsAreRefused) {
  EXPECT_THROW(simulate(one_f_one_b(2, 2), {.backward = 1, .weight = 2}), Error);
  EXPECT_THROW(simulate(one_f_one_b(2, 2), {.communication = -1}), Error);
}

}  // namespace
}  // namespace hai
