#include "parallel/pipeline/simulator.h"

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "framework/core/error.h"
#include "parallel/pipeline/rank_ledger.h"

namespace hai {
namespace {

// A message in flight: its key is (activation?, stage, micro-batch).
using MessageKey = std::tuple<bool, int, int>;

struct Message {
  int sender = 0;
  int step = 0;
  double arrival = 0;
  bool received = false;
};

bool is_receive(InstructionKind kind) {
  return kind == InstructionKind::receive_activation || kind == InstructionKind::receive_gradient;
}

bool is_send(InstructionKind kind) {
  return kind == InstructionKind::send_activation || kind == InstructionKind::send_gradient;
}

MessageKey message_key(const Instruction& instruction) {
  bool activation = instruction.kind == InstructionKind::send_activation ||
                    instruction.kind == InstructionKind::receive_activation;
  return {activation, instruction.stage, instruction.microbatch};
}

void check_costs(const StepCosts& costs) {
  HAI_CHECK(costs.forward >= 0 && costs.backward >= 0 && costs.weight >= 0 && costs.forward_backward >= 0 &&
                costs.communication >= 0 && costs.weight <= costs.backward,
            "pipeline costs must be >= 0 with weight <= backward (F {}, B {}, W {}, F&B {}, communication {})",
            costs.forward, costs.backward, costs.weight, costs.forward_backward, costs.communication);
}

// All ranks stepping through their lists together.
class PipelineRun {
 public:
  PipelineRun(const Schedule& schedule, std::vector<StepCosts> rank_costs)
      : schedule_(schedule), costs_(std::move(rank_costs)), next_step_(schedule.ranks.size(), 0),
        clock_(schedule.ranks.size(), 0.0), result_{.ranks = std::vector<RankSimulation>(schedule.ranks.size())} {
    for (int rank = 0; rank < rank_count(); ++rank) ledgers_.emplace_back(schedule.shape, rank);
  }

  Simulation run() {
    while (!finished()) {
      bool moved = false;
      for (int rank = 0; rank < rank_count(); ++rank) moved = advance(rank) || moved;
      if (!moved) throw_deadlock();
    }
    check_all_received();
    for (const RankLedger& ledger : ledgers_) ledger.check_complete();
    return summary();
  }

 private:
  int rank_count() const { return static_cast<int>(schedule_.ranks.size()); }

  bool finished() const {
    for (int rank = 0; rank < rank_count(); ++rank) {
      if (next_step_[rank] < schedule_.ranks[rank].size()) return false;
    }
    return true;
  }

  // Runs `rank` until it waits for a message that is not sent yet or its list ends; whether it moved.
  bool advance(int rank) {
    const std::vector<Instruction>& program = schedule_.ranks[rank];
    bool moved = false;
    while (next_step_[rank] < program.size()) {
      const int step = static_cast<int>(next_step_[rank]);
      const Instruction& instruction = program[step];
      ledgers_[rank].check(step, instruction);
      if (is_receive(instruction.kind) && !messages_.contains(message_key(instruction))) return moved;
      execute(rank, step, instruction);
      ledgers_[rank].record(instruction);
      ++next_step_[rank];
      moved = true;
    }
    return moved;
  }

  void execute(int rank, int step, const Instruction& instruction) {
    if (is_send(instruction.kind)) {
      messages_[message_key(instruction)] = {.sender = rank, .step = step,
                                             .arrival = clock_[rank] + costs_[rank].communication};
      channels_[channel_of(rank, instruction.peer, instruction)].push_back(message_key(instruction));
    } else if (is_receive(instruction.kind)) {
      check_in_channel_order(rank, step, instruction);
      Message& message = messages_.at(message_key(instruction));
      message.received = true;
      clock_[rank] = std::max(clock_[rank], message.arrival);
    } else {
      double start = clock_[rank];
      clock_[rank] += instruction_cost(instruction, costs_[rank]);
      result_.ranks[rank].compute.push_back({.step = step, .start = start, .end = clock_[rank]});
    }
  }

  // A channel of the engine's transport (framework/comm/peer_channels.h): (sender, receiver, activation?).
  using Channel = std::tuple<int, int, bool>;

  static Channel channel_of(int sender, int receiver, const Instruction& instruction) {
    return {sender, receiver, std::get<0>(message_key(instruction))};
  }

  // The engine's transport matches the messages of a channel in the order they were sent (NCCL has no tags).
  void check_in_channel_order(int rank, int step, const Instruction& instruction) {
    std::deque<MessageKey>& sent = channels_[channel_of(instruction.peer, rank, instruction)];
    const MessageKey& oldest = sent.front();  // NOTE: not empty: the receive runs once its message was sent
    if (oldest != message_key(instruction)) {
      HAI_THROW("pipeline rank {}, step {}, {}: rank {} sent another message on this channel before it, of stage {} "
                "for micro-batch {}, so a transport that matches messages in order would mix them up",
                rank, step, describe(instruction), instruction.peer, std::get<1>(oldest), std::get<2>(oldest));
    }
    sent.pop_front();
  }

  [[noreturn]] void throw_deadlock() const {
    std::string waiting;
    for (int rank = 0; rank < rank_count(); ++rank) {
      if (next_step_[rank] == schedule_.ranks[rank].size()) continue;
      const int step = static_cast<int>(next_step_[rank]);
      waiting += fmt::format("; pipeline rank {}, step {}, {} waits for a message never sent", rank, step,
                             describe(schedule_.ranks[rank][step]));
    }
    HAI_THROW("the pipeline schedule deadlocks{}", waiting);
  }

  void check_all_received() const {
    for (const auto& [key, message] : messages_) {
      if (message.received) continue;
      const Instruction& send = schedule_.ranks[message.sender][message.step];
      HAI_THROW("pipeline rank {}, step {}, {}: never received", message.sender, message.step, describe(send));
    }
  }

  Simulation summary() {
    result_.makespan = *std::max_element(clock_.begin(), clock_.end());
    for (int rank = 0; rank < rank_count(); ++rank) {
      RankSimulation& timeline = result_.ranks[rank];
      for (const TimedInstruction& timed : timeline.compute) timeline.busy += timed.end - timed.start;
      timeline.bubble = result_.makespan - timeline.busy;
      timeline.peak_activations = ledgers_[rank].peak_activations();
    }
    return std::move(result_);
  }

  const Schedule& schedule_;
  std::vector<StepCosts> costs_;  // per rank
  std::vector<RankLedger> ledgers_;
  std::vector<std::size_t> next_step_;
  std::vector<double> clock_;
  std::map<MessageKey, Message> messages_;
  std::map<Channel, std::deque<MessageKey>> channels_;  // messages sent and not yet received, oldest first
  Simulation result_;
};

}  // namespace

double instruction_cost(const Instruction& instruction, const StepCosts& costs) {
  switch (instruction.kind) {
    case InstructionKind::forward:
      return costs.forward;
    case InstructionKind::backward_input:
      return costs.backward - costs.weight;
    case InstructionKind::backward_weight:
      return costs.weight;
    case InstructionKind::forward_backward:
      return costs.forward_backward;
    default:
      return 0;
  }
}

Simulation simulate(const Schedule& schedule, const StepCosts& costs) {
  return simulate_per_rank(schedule, std::vector<StepCosts>(schedule.ranks.size(), costs));
}

Simulation simulate_per_rank(const Schedule& schedule, const std::vector<StepCosts>& rank_costs) {
  for (const StepCosts& costs : rank_costs) check_costs(costs);
  HAI_CHECK(static_cast<int>(schedule.ranks.size()) == schedule.shape.ranks,
            "the schedule has {} instruction lists for {} pipeline ranks", schedule.ranks.size(),
            schedule.shape.ranks);
  HAI_CHECK(rank_costs.size() == schedule.ranks.size(), "{} rank costs for {} pipeline ranks", rank_costs.size(),
            schedule.ranks.size());
  return PipelineRun(schedule, rank_costs).run();
}

}  // namespace hai
