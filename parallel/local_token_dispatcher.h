#pragma once
// The token dispatcher of ep = 1 (parallel/token_dispatcher.h): every expert is local, the local order is the
// routing plan's sorted order, dispatch is one permutation (a copy a row) and combine the weighted unpermutation.

#include "parallel/token_dispatcher.h"

namespace hai {

class LocalTokenDispatcher final : public TokenDispatcher {
 public:
  explicit LocalTokenDispatcher(int64_t routed_experts) : TokenDispatcher(routed_experts, 1, 0) {}

 protected:
  void plan_exchange(Context&) const override {}
  OwnedTensor to_local(Context&, OwnedTensor sorted) const override { return sorted; }
  OwnedTensor returned(Context&, OwnedTensor local) const override { return local; }
};

}  // namespace hai
