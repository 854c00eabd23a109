#pragma once
// What one pipeline rank has done so far in a simulated schedule: the F, B and W it ran, the messages it sent and
// received, and its live activations. The simulator asks it whether the next instruction may run (check) and then
// records it (record); a failed check throws hai::Error naming the rank, the step and the instruction.

#include <string>
#include <vector>

#include "parallel/pipeline/instruction.h"
#include "parallel/pipeline/placement.h"

namespace hai {

class RankLedger {
 public:
  RankLedger(const PipelineShape& shape, int rank);

  // Throws unless `instruction` (step `step` of this rank's list) may run now: its stages live on this rank, its
  // inputs are here (received, or made by this rank's own previous stage), it does not repeat work, and a message
  // goes to or comes from the rank holding the neighbouring stage. A receive is checked before its message exists.
  void check(int step, const Instruction& instruction) const;
  void record(const Instruction& instruction);

  // Throws unless every stage of this rank ran its F, B and W for every micro-batch that passes it.
  void check_complete() const;

  int peak_activations() const { return peak_activations_; }

 private:
  // Each returns what is wrong, or an empty string.
  std::string forward_problem(int stage, int microbatch) const;
  std::string backward_problem(int stage, int microbatch) const;
  std::string weight_problem(int stage, int microbatch) const;
  std::string message_problem(const Instruction& instruction) const;
  std::string placement_problem(int stage, int microbatch) const;
  std::string problem(const Instruction& instruction) const;
  std::size_t index(int stage, int microbatch) const;

  PipelineShape shape_;
  int rank_;
  int stages_;
  // [stages x micro_batches]: done for (stage, micro-batch).
  std::vector<char> forward_done_, backward_done_, weight_done_;
  std::vector<char> activation_sent_, gradient_sent_, activation_received_, gradient_received_;
  int live_activations_ = 0;
  int peak_activations_ = 0;
};

}  // namespace hai
