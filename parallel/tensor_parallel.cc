#include "parallel/tensor_parallel.h"

#include <algorithm>
#include <string>

#include "framework/core/error.h"

namespace hai {

TpRange tp_range(int64_t units, int tp, int rank) {
  HAI_CHECK(tp >= 1 && rank >= 0 && rank < tp && units >= 0, "tensor parallelism: rank {} of {} over {} units", rank,
            tp, units);
  int64_t per_rank = (units + tp - 1) / tp;
  int64_t begin = std::min(units, per_rank * rank);
  return {.begin = begin, .size = std::min(units, begin + per_rank) - begin};
}

void TensorParallel::sum(const Tensor& tensor) const { all_reduce(tensor, ReduceOp::sum); }

void TensorParallel::max(const Tensor& tensor) const { all_reduce(tensor, ReduceOp::max); }

// NOTE: the group's communicator picks the backend from the tensor: NCCL on the compute stream for device tensors
// (framework/comm/cuda/host_device_communicator.h), MPI for host ones.
void TensorParallel::all_reduce(const Tensor& tensor, ReduceOp op) const {
  if (size() == 1) return;
  StepProfiler* profiler = profiler_ != nullptr ? *profiler_ : nullptr;
  std::string resumed(profiler != nullptr ? profiler->running_phase() : std::string_view());
  if (resumed.empty()) return group_->all_reduce(tensor, op);
  profiler->mark(resumed.substr(0, resumed.find('.')) + ".tp_collective");
  group_->all_reduce(tensor, op);
  profiler->mark(resumed);
}

}  // namespace hai
