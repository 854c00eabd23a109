#pragma once
// The token dispatcher of expert parallelism (parallel/token_dispatcher.h) over an EP group: rank i owns the global
// experts [i * L, (i + 1) * L), L = E / ep. Every rank routes its own tokens over all E experts; its rows for one
// owner are consecutive in the routing plan's order. Per MoE layer and micro-batch, with no host synchronisation
// (docs/design/token-dispatcher.md):
//   route:    the rows per (destination, local expert) are counted from the plan on the device and exchanged as a
//             device all-to-all of ep * L i32 (fixed size); the receive layout is computed from them on the device;
//   dispatch: one gather packs the token rows (permutation and packing in one copy) into ep chunks of C rows, C =
//             T * min(K, L) (no rank can send another more: a token's K experts are distinct), one all-to-all of
//             fixed-size chunks moves them, one gather orders what arrived by local expert;
//   combine:  the reverse (one gather into chunks, the all-to-all back), then the weighted sum reads each (token, k)'s
//             row straight from the returned chunks (slot_plan), as its backward writes the gradients into them.
// The chunks are sized from the bound, not from the counts, so the host issues every collective without reading
// the counts: the price is memory (send and receive buffers of ep * C rows, and local tensors of ep * C rows for the
// experts' activations) and the unused rows of each chunk on the wire.

#include "framework/comm/communicator.h"
#include "parallel/token_dispatcher.h"

namespace hai {

class AllToAllTokenDispatcher final : public TokenDispatcher {
 public:
  // routed_experts: E, a multiple of group.size(). The group must outlive the dispatcher.
  AllToAllTokenDispatcher(Communicator& group, int64_t routed_experts);

  // C for T tokens of K experts each.
  int64_t capacity(int64_t tokens, int64_t experts_per_token) const;

 protected:
  void plan_exchange(Context& ctx) const override;
  const RoutingPlan& combine_plan(const Context& ctx) const override { return ctx.slot_plan; }
  OwnedTensor tokens_to_local(Context& ctx, const Tensor& tokens) const override;
  OwnedTensor returned(Context& ctx, OwnedTensor local) const override;
  OwnedTensor to_local(Context& ctx, OwnedTensor rows) const override;

 private:
  // [ep * C, ...row] the chunks each rank sent this one <- send: [ep * C, ...row] the chunks for each rank.
  OwnedTensor exchange(const Tensor& send) const;
  // rows [N, ...row] gathered by index [M] i32 -> [M, ...row]
  static OwnedTensor gathered(const Tensor& rows, const Tensor& index);

  Communicator& group_;
};

}  // namespace hai
