#include "parallel/expert_exchange.h"

#include <algorithm>
#include <numeric>

#include "framework/core/error.h"
#include "framework/device/fp8_quantize.h"

namespace hai {
namespace {

int64_t sum(std::span<const int64_t> values) { return std::accumulate(values.begin(), values.end(), int64_t{0}); }

void check_rows(const Tensor& tensor, int64_t rows, const char* what) {
  HAI_CHECK(tensor.rank() >= 1 && tensor.size(0) == rows, "expert exchange: {} {} must have {} rows", what,
            tensor.str(), rows);
}

// The same tensor with `rows` rows: [rows, ...row] of a contiguous [N, ...row].
Shape with_rows(const Tensor& tensor, int64_t rows) {
  std::vector<int64_t> dims = tensor.shape().to_vector();
  dims[0] = rows;
  return Shape(dims);
}

}  // namespace

void round_trip_fp8_rows(const Tensor& rows, bool pow2_scales) {
  check_dtype(rows, DType::f32, "fp8 round trip rows");
  Fp8Rows fp8 = quantize_rows(rows, pow2_scales);
  dequantize_1x128(rows, fp8.values, fp8.scales);
}

int64_t ExpertExchange::Route::sent_total() const { return sum(send_rows); }

ExpertExchange::ExpertExchange(Communicator& group, int64_t routed_experts)
    : group_(group), routed_experts_(routed_experts) {
  HAI_CHECK(routed_experts > 0 && routed_experts % group.size() == 0,
            "expert parallelism: {} routed experts cannot be split evenly over {} ranks", routed_experts,
            group.size());
}

ExpertExchange::Route ExpertExchange::route(std::span<const int64_t> expert_rows) {
  HAI_CHECK(static_cast<int64_t>(expert_rows.size()) == routed_experts_,
            "expert exchange: {} expert row counts, expected {}", expert_rows.size(), routed_experts_);
  const int ranks = group_.size();
  const int64_t local = local_experts();
  OwnedTensor sent(Shape{ranks, local}, DType::i64);      // [ep, local]: the counts of rank p's experts, row p
  OwnedTensor arrived(Shape{ranks, local}, DType::i64);   // [ep, local]: rank p's counts of my experts, row p
  std::copy(expert_rows.begin(), expert_rows.end(), sent.data<int64_t>());
  std::vector<int64_t> one_row_each(static_cast<size_t>(ranks), 1);
  group_.all_to_all_v(sent, one_row_each, arrived, one_row_each);

  Route route;
  const int64_t* received = arrived.data<int64_t>();
  route.received.assign(received, received + ranks * local);
  route.local_offsets.assign(static_cast<size_t>(local + 1), 0);
  for (int peer = 0; peer < ranks; ++peer) {
    std::span<const int64_t> to_peer = expert_rows.subspan(static_cast<size_t>(peer * local),
                                                           static_cast<size_t>(local));
    std::span<const int64_t> from_peer(received + peer * local, static_cast<size_t>(local));
    route.send_rows.push_back(sum(to_peer));
    route.recv_rows.push_back(sum(from_peer));
    for (int64_t expert = 0; expert < local; ++expert) route.local_offsets[expert + 1] += from_peer[expert];
  }
  std::partial_sum(route.local_offsets.begin(), route.local_offsets.end(), route.local_offsets.begin());
  return route;
}

void ExpertExchange::dispatch(const Route& route, const Tensor& local, const Tensor& sorted) {
  check_rows(sorted, route.sent_total(), "sorted rows");
  check_rows(local, route.received_total(), "local rows");
  if (group_.size() == 1) {
    if (local.numel() > 0) copy_tensor(local, sorted);
    return;
  }
  OwnedTensor arrival(with_rows(local, route.received_total()), local.dtype(), local.device());  // [R, ...row]
  group_.all_to_all_v(sorted, route.send_rows, arrival, route.recv_rows);
  reorder(route, arrival, local, /*to_local=*/true);
}

Fp8Rows ExpertExchange::dispatch_fp8(const Route& route, const Tensor& sorted, bool pow2_scales) {
  check_rows(sorted, route.sent_total(), "sorted rows");
  HAI_CHECK(sorted.rank() == 2, "fp8 expert dispatch: rows {} must be [rows, H]", sorted.str());
  check_dtype(sorted, DType::f32, "fp8 expert dispatch rows");
  Fp8Rows sent = quantize_rows(sorted, pow2_scales);  // [S, H]
  if (group_.size() == 1) return sent;
  const int64_t received = route.received_total(), columns = sorted.size(1);
  Fp8Rows arrival(received, columns, sorted.device());  // [R, H] by source rank
  group_.all_to_all_v(sent.values, route.send_rows, arrival.values, route.recv_rows);
  group_.all_to_all_v(sent.scales, route.send_rows, arrival.scales, route.recv_rows);
  Fp8Rows placed(received, columns, sorted.device());  // [R, H] by local expert
  reorder(route, arrival.values, placed.values, /*to_local=*/true);
  reorder(route, arrival.scales, placed.scales, /*to_local=*/true);
  return placed;
}

void ExpertExchange::combine(const Route& route, const Tensor& sorted, const Tensor& local) {
  check_rows(sorted, route.sent_total(), "sorted rows");
  check_rows(local, route.received_total(), "local rows");
  if (group_.size() == 1) {
    if (local.numel() > 0) copy_tensor(sorted, local);
    return;
  }
  OwnedTensor arrival(with_rows(local, route.received_total()), local.dtype(), local.device());  // [R, ...row]
  reorder(route, arrival, local, /*to_local=*/false);
  group_.all_to_all_v(arrival, route.recv_rows, sorted, route.send_rows);
}

void ExpertExchange::reorder(const Route& route, const Tensor& arrival_order, const Tensor& local_order,
                             bool to_local) const {
  const int ranks = group_.size();
  const int64_t local = local_experts();
  std::vector<int64_t> next_local(route.local_offsets.begin(), route.local_offsets.end() - 1);  // [local]
  int64_t arrival_row = 0;
  for (int peer = 0; peer < ranks; ++peer) {
    for (int64_t expert = 0; expert < local; ++expert) {
      int64_t rows = route.received[peer * local + expert];
      if (rows == 0) continue;
      Tensor arrived = arrival_order.slice(arrival_row, arrival_row + rows);
      Tensor placed = local_order.slice(next_local[expert], next_local[expert] + rows);
      if (to_local) {
        copy_tensor(placed, arrived);
      } else {
        copy_tensor(arrived, placed);
      }
      arrival_row += rows;
      next_local[expert] += rows;
    }
  }
}

}  // namespace hai
