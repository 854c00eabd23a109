#include "parallel/all_to_all_token_dispatcher.h"

#include <numeric>
#include <utility>

namespace hai {

AllToAllTokenDispatcher::AllToAllTokenDispatcher(Communicator& group, int64_t routed_experts)
    : TokenDispatcher(routed_experts, group.size(), group.rank()), group_(group) {}

std::vector<int32_t> AllToAllTokenDispatcher::read_counts(const Tensor& counts) const {
  if (!count_reader_) count_reader_ = std::make_unique<DispatchCountReader>(counts.device());
  return count_reader_->read(counts);
}

void AllToAllTokenDispatcher::plan_exchange(Context& ctx) const {
  const RoutingPlan& plan = ctx.plan->plan();
  const Device device = plan.expert_offsets.device();
  const int64_t ep = ranks(), local = local_experts();
  ctx.counts = OwnedTensor(Shape{2, ep, local}, DType::i32, device);  // [2, ep, L]
  const Tensor send_counts = ctx.counts.tensor().slice(0, 1).reshape(Shape{ep, local});
  const Tensor recv_counts = ctx.counts.tensor().slice(1, 2).reshape(Shape{ep, local});
  count_dispatch_rows(send_counts, plan);
  std::vector<int64_t> one_row_each(static_cast<size_t>(ep), 1);
  group_.all_to_all_v(send_counts, one_row_each, recv_counts, one_row_each);
  const std::vector<int32_t> counts = read_counts(ctx.counts);  // [2 * ep * L]
  ctx.send_rows.assign(static_cast<size_t>(ep), 0);
  ctx.recv_rows.assign(static_cast<size_t>(ep), 0);
  for (int64_t rank = 0; rank < ep; ++rank) {
    for (int64_t expert = 0; expert < local; ++expert) {
      ctx.send_rows[static_cast<size_t>(rank)] += counts[static_cast<size_t>(rank * local + expert)];
      ctx.recv_rows[static_cast<size_t>(rank)] += counts[static_cast<size_t>((ep + rank) * local + expert)];
    }
  }
  const int64_t received = std::accumulate(ctx.recv_rows.begin(), ctx.recv_rows.end(), int64_t{0});
  // NOTE: one i32 buffer for every map: [L + 1 | 2 (L * ep + 1) | L + 1 | ep * L | 2 R].
  ctx.indices = OwnedTensor(Shape{2 * (local + 1) + 2 * (local * ep + 1) + ep * local + 2 * received}, DType::i32,
                            device);
  int64_t used = 0;
  auto take = [&](int64_t count) {
    Tensor view = ctx.indices.tensor().slice(used, used + count);
    used += count;
    return view;
  };
  ctx.receive = {.local_offsets = take(local + 1),
                 .segments = take(local * ep + 1),
                 .padded_segments = take(local * ep + 1),
                 .padded_local_offsets = take(local + 1),
                 .arrival_starts = take(ep * local),
                 .local_arrival = take(received),
                 .arrival_local = take(received)};
  plan_dispatch_receive(ctx.receive, recv_counts);
}

OwnedTensor AllToAllTokenDispatcher::gathered(const Tensor& rows, const Tensor& index) {
  std::vector<int64_t> dims = rows.shape().to_vector();
  dims[0] = index.numel();
  OwnedTensor out(Shape(dims), rows.dtype(), rows.device());
  gather_rows(out, rows, index);
  return out;
}

OwnedTensor AllToAllTokenDispatcher::exchange(const Tensor& send, const std::vector<int64_t>& send_rows,
                                              const std::vector<int64_t>& recv_rows) const {
  std::vector<int64_t> dims = send.shape().to_vector();
  dims[0] = std::accumulate(recv_rows.begin(), recv_rows.end(), int64_t{0});
  OwnedTensor recv(Shape(dims), send.dtype(), send.device());  // [sum(recv_rows), ...row]
  group_.all_to_all_v(send, send_rows, recv, recv_rows);
  return recv;
}

OwnedTensor AllToAllTokenDispatcher::to_local(Context& ctx, OwnedTensor sorted) const {
  OwnedTensor arrived = exchange(sorted, ctx.send_rows, ctx.recv_rows);  // [R, ...row] by source rank
  sorted = OwnedTensor();
  return gathered(arrived, ctx.receive.local_arrival);  // [R, ...row] by local expert
}

OwnedTensor AllToAllTokenDispatcher::returned(Context& ctx, OwnedTensor local) const {
  OwnedTensor arrival = gathered(local, ctx.receive.arrival_local);  // [R, ...row] by source rank
  local = OwnedTensor();
  return exchange(arrival, ctx.recv_rows, ctx.send_rows);  // [T * K, ...row] in the plan's order
}

}  // namespace hai
