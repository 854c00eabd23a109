#include "framework/device/expert_dispatch.h"

#include <algorithm>
#include <vector>

#include "framework/device/cpu/expert_dispatch.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/expert_dispatch.h"
#endif

namespace hai {
namespace {

// tensor: i32 of `shape` on `device`.
void check_index(const Tensor& tensor, const Shape& shape, Device device, const char* what) {
  check_shape(tensor, shape, what);
  check_dtype(tensor, DType::i32, what);
  HAI_CHECK(tensor.device() == device, "{} {} must be on {}", what, tensor.str(), to_string(device));
}

}  // namespace

void plan_dispatch_send(const DispatchSendLayout& layout, const RoutingPlan& plan, [[maybe_unused]] Stream stream) {
  HAI_CHECK(layout.send_counts.rank() == 2 && layout.send_counts.size(0) >= 1 && layout.send_counts.size(1) >= 1,
            "token dispatch: send_counts must be [ep, L], got {}", layout.send_counts.str());
  const int64_t ranks = layout.send_counts.size(0), local = layout.send_counts.size(1);
  const Device device = plan.positions.device();
  HAI_CHECK(plan.expert_offsets.numel() == ranks * local + 1,
            "token dispatch: {} experts in the routing plan, {} ranks of {} local experts in the layout",
            plan.expert_offsets.numel() - 1, ranks, local);
  HAI_CHECK(layout.slot_token.rank() == 1 && layout.slot_token.numel() % ranks == 0,
            "token dispatch: slot_token {} must be [ep * C]", layout.slot_token.str());
  check_index(layout.send_counts, Shape{ranks, local}, device, "token dispatch send_counts");
  check_index(layout.slot_token, layout.slot_token.shape(), device, "token dispatch slot_token");
  check_index(layout.token_slots, plan.positions.shape(), device, "token dispatch token_slots");
  if (device.is_cpu()) return cpu::plan_dispatch_send(layout, plan);
#ifdef HAI_WITH_CUDA
  return cuda::plan_dispatch_send(layout, plan, stream);
#else
  throw_no_backend("plan_dispatch_send", device);
#endif
}

void plan_dispatch_receive(const DispatchReceiveLayout& layout, const Tensor& recv_counts,
                           [[maybe_unused]] Stream stream) {
  HAI_CHECK(recv_counts.rank() == 2 && recv_counts.size(0) >= 1 && recv_counts.size(1) >= 1,
            "token dispatch: recv_counts must be [ep, L], got {}", recv_counts.str());
  const int64_t ranks = recv_counts.size(0), local = recv_counts.size(1);
  const Device device = recv_counts.device();
  check_dtype(recv_counts, DType::i32, "token dispatch recv_counts");
  HAI_CHECK(layout.local_arrival.rank() == 1 && layout.local_arrival.numel() % ranks == 0,
            "token dispatch: local_arrival {} must be [ep * C]", layout.local_arrival.str());
  check_index(layout.local_offsets, Shape{local + 1}, device, "token dispatch local_offsets");
  check_index(layout.segments, Shape{local * ranks + 1}, device, "token dispatch segments");
  check_index(layout.padded_segments, Shape{local * ranks + 1}, device, "token dispatch padded_segments");
  check_index(layout.padded_local_offsets, Shape{local + 1}, device, "token dispatch padded_local_offsets");
  check_index(layout.arrival_starts, Shape{ranks * local}, device, "token dispatch arrival_starts");
  check_index(layout.local_arrival, layout.local_arrival.shape(), device, "token dispatch local_arrival");
  check_index(layout.arrival_local, layout.local_arrival.shape(), device, "token dispatch arrival_local");
  if (device.is_cpu()) return cpu::plan_dispatch_receive(layout, recv_counts);
#ifdef HAI_WITH_CUDA
  return cuda::plan_dispatch_receive(layout, recv_counts, stream);
#else
  throw_no_backend("plan_dispatch_receive", device);
#endif
}

void gather_rows(const Tensor& out, const Tensor& in, const Tensor& index, [[maybe_unused]] Stream stream) {
  HAI_CHECK(out.rank() >= 1 && in.rank() >= 1 && out.dtype() == in.dtype(),
            "gather_rows: out {} and in {} must be rows of one dtype", out.str(), in.str());
  std::vector<int64_t> out_row = out.shape().to_vector(), in_row = in.shape().to_vector();
  HAI_CHECK(std::equal(out_row.begin() + 1, out_row.end(), in_row.begin() + 1, in_row.end()),
            "gather_rows: rows of out {} and in {} differ", out.str(), in.str());
  check_index(index, Shape{out.size(0)}, out.device(), "gather_rows index");
  check_same_device(in, out, "gather_rows");
  HAI_CHECK(!tensors_overlap(out, in), "gather_rows: out must not overlap in");
  if (out.device().is_cpu()) return cpu::gather_rows(out, in, index);
#ifdef HAI_WITH_CUDA
  return cuda::gather_rows(out, in, index, stream);
#else
  throw_no_backend("gather_rows", out.device());
#endif
}

}  // namespace hai
