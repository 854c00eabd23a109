#pragma once
// The validator and simulator of pipeline schedules: it runs every rank's instruction list against the others and
// proves the schedule sound, or throws hai::Error naming the rank, the step (index in the rank's list) and the
// instruction that breaks it. Sound means: every stage and message sits on the rank placement.h says; F runs after
// its input arrived (or its previous stage ran on this rank), B after its F and its output gradient, W after its B,
// nothing twice; every send has its receive and every receive its send; nothing deadlocks; every rank ends with
// F, B and W done for every micro-batch through each of its stages; and between two ranks, the activations (and
// the gradients) are received in the order they were sent, as the engine's transport matches them
// (framework/comm/peer_channels.h).
//
// Time model: compute takes its cost (StepCosts); a send costs its rank nothing and its message arrives
// `communication` later (sends are asynchronous, as isend / NCCL send posted ahead); a receive waits for its
// message. A rank runs its list in order. Messages match by (kind, stage, micro-batch), like tagged MPI messages.

#include <vector>

#include "parallel/pipeline/schedule.h"

namespace hai {

// Costs in any time unit. A full backward is backward = B + W: an instruction B (input gradient) costs
// backward - weight, W costs weight, FB costs forward_backward (its F and its full backward, overlapped).
struct StepCosts {
  double forward = 1;
  double backward = 2;
  double weight = 1;
  double forward_backward = 3;
  double communication = 0;
};

struct TimedInstruction {
  int step = 0;  // index in the rank's list
  double start = 0;
  double end = 0;
};

struct RankSimulation {
  std::vector<TimedInstruction> compute;  // the compute instructions of the rank, in order, timed
  double busy = 0;                        // total compute time
  double bubble = 0;                      // makespan - busy: the time the rank waits
  // The most (stage, micro-batch) activations held at once: from the start of an F to the end of its B.
  int peak_activations = 0;
};

struct Simulation {
  double makespan = 0;  // when the last rank finishes
  std::vector<RankSimulation> ranks;
};

// Validates `schedule` and times it with `costs` (all >= 0, weight <= backward); throws hai::Error on the first
// problem.
Simulation simulate(const Schedule& schedule, const StepCosts& costs);
// The same with costs of each rank's own (one per pipeline rank): every instruction costs what its rank's take,
// as when the stages are not balanced (the last rank also runs the head and the loss).
Simulation simulate_per_rank(const Schedule& schedule, const std::vector<StepCosts>& rank_costs);

// The cost of one compute instruction; 0 for messages.
double instruction_cost(const Instruction& instruction, const StepCosts& costs);

}  // namespace hai
