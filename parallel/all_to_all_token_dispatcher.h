#pragma once
// The token dispatcher of expert parallelism (parallel/token_dispatcher.h) over an EP group: rank i owns the global
// experts [i * L, (i + 1) * L), L = E / ep. Every rank routes its own tokens over all E experts; its rows for one
// owner are consecutive in the routing plan's sorted order, so the permutation packs the send buffer. Per MoE layer
// and micro-batch (docs/design/token-dispatcher.md):
//   route:    the rows per (destination, local expert) are counted from the plan on the device and exchanged as a
//             device all-to-all of ep * L i32; the counts are copied into pinned host memory on the stream and the
//             host waits for that copy's event (the one host wait of a dispatch, DispatchCountReader); the receive
//             layout is computed from the device counts on the device;
//   dispatch: the permutation (sorted = send order), an all-to-all-v of exactly the routed rows, one gather orders
//             what arrived by local expert;
//   combine:  the reverse (one gather back into arrival order, the all-to-all-v back), then the weighted sum.
// Every buffer holds the rows that move: T * K sent, R = the counts' sum received; nothing is sized from a bound.

#include <memory>
#include <vector>

#include "framework/comm/communicator.h"
#include "parallel/token_dispatcher.h"

namespace hai {

class AllToAllTokenDispatcher final : public TokenDispatcher {
 public:
  // routed_experts: E, a multiple of group.size(). The group must outlive the dispatcher.
  AllToAllTokenDispatcher(Communicator& group, int64_t routed_experts);

 protected:
  void plan_exchange(Context& ctx) const override;
  OwnedTensor to_local(Context& ctx, OwnedTensor sorted) const override;
  OwnedTensor returned(Context& ctx, OwnedTensor local) const override;

 private:
  // [sum(recv_rows), ...row] <- send: [sum(send_rows), ...row], send_rows[p] rows for rank p in rank order.
  OwnedTensor exchange(const Tensor& send, const std::vector<int64_t>& send_rows,
                       const std::vector<int64_t>& recv_rows) const;
  // rows [N, ...row] gathered by index [M] i32 -> [M, ...row]
  static OwnedTensor gathered(const Tensor& rows, const Tensor& index);
  // The counts of ctx (on `device`) on the host.
  std::vector<int32_t> read_counts(const Tensor& counts) const;

  Communicator& group_;
  // NOTE: made at the first route, on the device the routing runs on.
  mutable std::unique_ptr<DispatchCountReader> count_reader_;
};

}  // namespace hai
