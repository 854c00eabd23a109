#include "parallel/tensor_parallel.h"

#include <algorithm>
#include <string>

#include "framework/core/error.h"

namespace hai {
namespace {

// One rank's all-gather or reduce-scatter: out <- in (the same elements), nothing when in is out.
void copy_rows(const Tensor& out, const Tensor& in) {
  if (out.raw() != in.raw()) copy_tensor_async(out, in.reshape(out.shape()));
}

}  // namespace

TpRange tp_range(int64_t units, int tp, int rank) {
  HAI_CHECK(tp >= 1 && rank >= 0 && rank < tp && units >= 0, "tensor parallelism: rank {} of {} over {} units", rank,
            tp, units);
  int64_t per_rank = (units + tp - 1) / tp;
  int64_t begin = std::min(units, per_rank * rank);
  return {.begin = begin, .size = std::min(units, begin + per_rank) - begin};
}

// NOTE: the group's communicator picks the backend from the tensor: NCCL on the compute stream for device tensors
// (framework/comm/cuda/host_device_communicator.h), MPI for host ones.
template <typename Collective>
void TensorParallel::charged(Collective&& collective) const {
  StepProfiler* profiler = profiler_ != nullptr ? *profiler_ : nullptr;
  std::string resumed(profiler != nullptr ? profiler->running_phase() : std::string_view());
  if (resumed.empty()) return collective();
  profiler->mark(resumed.substr(0, resumed.find('.')) + ".tp_collective");
  collective();
  profiler->mark(resumed);
}

void TensorParallel::sum(const Tensor& tensor) const { all_reduce(tensor, ReduceOp::sum); }

void TensorParallel::max(const Tensor& tensor) const { all_reduce(tensor, ReduceOp::max); }

void TensorParallel::all_gather(const Tensor& out, const Tensor& in) const {
  if (size() == 1) return copy_rows(out, in);
  charged([&] { group_->all_gather(out, in); });
}

void TensorParallel::reduce_scatter(const Tensor& out, const Tensor& in) const {
  if (size() == 1) return copy_rows(out, in);
  charged([&] { group_->reduce_scatter(out, in, ReduceOp::sum); });
}

void TensorParallel::all_reduce(const Tensor& tensor, ReduceOp op) const {
  if (size() == 1) return;
  charged([&] { group_->all_reduce(tensor, op); });
}

}  // namespace hai
