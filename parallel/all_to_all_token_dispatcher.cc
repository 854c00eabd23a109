#include "parallel/all_to_all_token_dispatcher.h"

#include <algorithm>
#include <vector>

namespace hai {

AllToAllTokenDispatcher::AllToAllTokenDispatcher(Communicator& group, int64_t routed_experts)
    : TokenDispatcher(routed_experts, group.size(), group.rank()), group_(group) {}

int64_t AllToAllTokenDispatcher::capacity(int64_t tokens, int64_t experts_per_token) const {
  return tokens * std::min(experts_per_token, local_experts());
}

void AllToAllTokenDispatcher::plan_exchange(Context& ctx) const {
  const RoutingPlan& plan = ctx.plan->plan();
  const Device device = plan.positions.device();
  const int64_t ep = ranks(), local = local_experts(), sorted = plan.sources.numel();
  const int64_t slots = ep * capacity(plan.positions.size(0), plan.positions.size(1));
  // NOTE: one i32 buffer for every map: [ep * L | ep * C | T * K | L + 1 | 2 (L * ep + 1) | L + 1 | ep * L |
  // 2 * ep * C].
  const int64_t total = ep * local + slots + sorted + 2 * (local + 1) + 2 * (local * ep + 1) + ep * local +
                        2 * slots;
  ctx.indices = OwnedTensor(Shape{total}, DType::i32, device);
  int64_t used = 0;
  auto take = [&](int64_t count) {
    Tensor view = ctx.indices.tensor().slice(used, used + count);
    used += count;
    return view;
  };
  ctx.send = {.send_counts = take(ep * local).reshape(Shape{ep, local}),
              .slot_token = take(slots),
              .token_slots = take(sorted).reshape(plan.positions.shape())};
  ctx.slot_plan = {.positions = ctx.send.token_slots, .sources = plan.sources, .expert_offsets = plan.expert_offsets};
  ctx.receive = {.local_offsets = take(local + 1),
                 .segments = take(local * ep + 1),
                 .padded_segments = take(local * ep + 1),
                 .padded_local_offsets = take(local + 1),
                 .arrival_starts = take(ep * local),
                 .local_arrival = take(slots),
                 .arrival_local = take(slots)};
  plan_dispatch_send(ctx.send, plan);
  ctx.recv_counts = OwnedTensor(Shape{ep, local}, DType::i32, device);  // [ep, L]
  std::vector<int64_t> one_row_each(static_cast<size_t>(ep), 1);
  group_.all_to_all_v(ctx.send.send_counts, one_row_each, ctx.recv_counts, one_row_each);
  plan_dispatch_receive(ctx.receive, ctx.recv_counts);
}

OwnedTensor AllToAllTokenDispatcher::gathered(const Tensor& rows, const Tensor& index) {
  std::vector<int64_t> dims = rows.shape().to_vector();
  dims[0] = index.numel();
  OwnedTensor out(Shape(dims), rows.dtype(), rows.device());
  gather_rows(out, rows, index);
  return out;
}

OwnedTensor AllToAllTokenDispatcher::exchange(const Tensor& send) const {
  OwnedTensor recv(send.shape(), send.dtype(), send.device());  // [ep * C, ...row]
  std::vector<int64_t> chunk(static_cast<size_t>(ranks()), send.size(0) / ranks());
  group_.all_to_all_v(send, chunk, recv, chunk);
  return recv;
}

OwnedTensor AllToAllTokenDispatcher::tokens_to_local(Context& ctx, const Tensor& tokens) const {
  OwnedTensor arrived = exchange(gathered(tokens, ctx.send.slot_token));
  return gathered(arrived, ctx.receive.local_arrival);
}

OwnedTensor AllToAllTokenDispatcher::returned(Context& ctx, OwnedTensor local) const {
  return exchange(gathered(local, ctx.receive.arrival_local));  // [ep * C, ...row]
}

OwnedTensor AllToAllTokenDispatcher::to_local(Context& ctx, OwnedTensor rows) const {
  return gathered(exchange(rows), ctx.receive.local_arrival);  // [R, ...row]
}

}  // namespace hai
