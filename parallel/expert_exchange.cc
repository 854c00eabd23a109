#include "parallel/expert_exchange.h"

#include "framework/core/error.h"

namespace hai {

ExpertExchange::ExpertExchange(Communicator& group, int64_t routed_experts)
    : group_(group), routed_experts_(routed_experts) {
  HAI_CHECK(routed_experts > 0 && routed_experts % group.size() == 0,
            "expert parallelism: {} routed experts cannot be split evenly over {} ranks", routed_experts,
            group.size());
}

}  // namespace hai
