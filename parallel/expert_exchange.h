#pragma once
// ExpertExchange: the expert-parallel group and the split of the routed experts over it (docs/architecture.md
// "Parallel layout", docs/design/expert-parallel.md). The E routed experts are split evenly over the group's ep
// ranks: rank i owns the global experts [i * E / ep, (i + 1) * E / ep). The MoE layer's token dispatcher
// (parallel/token_dispatcher.h, make_token_dispatcher) moves the rows over group().

#include <cstdint>

#include "framework/comm/communicator.h"

namespace hai {

class ExpertExchange {
 public:
  // routed_experts: E, a multiple of group.size(). The group must outlive the exchange.
  ExpertExchange(Communicator& group, int64_t routed_experts);

  int64_t routed_experts() const { return routed_experts_; }
  int64_t local_experts() const { return routed_experts_ / group_.size(); }
  int64_t first_local_expert() const { return group_.rank() * local_experts(); }
  int ranks() const { return group_.size(); }
  Communicator& group() const { return group_; }

 private:
  Communicator& group_;
  int64_t routed_experts_;
};

}  // namespace hai
