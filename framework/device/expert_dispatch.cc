#include "framework/device/expert_dispatch.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "framework/device/cpu/expert_dispatch.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/expert_dispatch.h"
#include "framework/device/cuda/ops.h"
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

void count_dispatch_rows(const Tensor& send_counts, const RoutingPlan& plan, [[maybe_unused]] Stream stream) {
  HAI_CHECK(send_counts.rank() == 2 && send_counts.size(0) >= 1 && send_counts.size(1) >= 1,
            "token dispatch: send_counts must be [ep, L], got {}", send_counts.str());
  const int64_t ranks = send_counts.size(0), local = send_counts.size(1);
  const Device device = plan.expert_offsets.device();
  HAI_CHECK(plan.expert_offsets.numel() == ranks * local + 1,
            "token dispatch: {} experts in the routing plan, {} ranks of {} local experts in the layout",
            plan.expert_offsets.numel() - 1, ranks, local);
  check_index(send_counts, Shape{ranks, local}, device, "token dispatch send_counts");
  check_index(plan.expert_offsets, Shape{ranks * local + 1}, device, "token dispatch expert_offsets");
  if (device.is_cpu()) return cpu::count_dispatch_rows(send_counts, plan);
#ifdef HAI_WITH_CUDA
  return cuda::count_dispatch_rows(send_counts, plan, stream);
#else
  throw_no_backend("count_dispatch_rows", device);
#endif
}

void plan_dispatch_receive(const DispatchReceiveLayout& layout, const Tensor& recv_counts,
                           [[maybe_unused]] Stream stream) {
  HAI_CHECK(recv_counts.rank() == 2 && recv_counts.size(0) >= 1 && recv_counts.size(1) >= 1,
            "token dispatch: recv_counts must be [ep, L], got {}", recv_counts.str());
  const int64_t ranks = recv_counts.size(0), local = recv_counts.size(1);
  const Device device = recv_counts.device();
  check_dtype(recv_counts, DType::i32, "token dispatch recv_counts");
  HAI_CHECK(layout.local_arrival.rank() == 1, "token dispatch: local_arrival {} must be [R]",
            layout.local_arrival.str());
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

DispatchCountReader::DispatchCountReader(Device device) : device_(device) {
#ifdef HAI_WITH_CUDA
  if (device.is_cuda()) copied_ = cuda::create_event(device);
#endif
}

DispatchCountReader::~DispatchCountReader() {
#ifdef HAI_WITH_CUDA
  if (!device_.is_cuda()) return;
  cuda::free_pinned(pinned_);
  cuda::destroy_stream_and_event(Stream{}, copied_);
#endif
}

std::vector<int32_t> DispatchCountReader::read(const Tensor& counts, [[maybe_unused]] Stream stream) {
  check_dtype(counts, DType::i32, "token dispatch counts");
  HAI_CHECK(counts.device() == device_, "token dispatch: counts {} must be on {}", counts.str(), to_string(device_));
  std::vector<int32_t> values(static_cast<size_t>(counts.numel()));
  if (device_.is_cpu()) {
    if (!values.empty()) std::memcpy(values.data(), counts.data<int32_t>(), values.size() * sizeof(int32_t));
    return values;
  }
#ifdef HAI_WITH_CUDA
  if (counts.numel() > pinned_count_) {
    cuda::free_pinned(pinned_);
    pinned_ = nullptr;
    pinned_ = cuda::allocate_pinned(device_, counts.bytes());
    pinned_count_ = counts.numel();
  }
  cuda::read_counts(device_, values.data(), pinned_, counts, copied_, stream);
  return values;
#else
  throw_no_backend("DispatchCountReader::read", device_);
#endif
}

}  // namespace hai
