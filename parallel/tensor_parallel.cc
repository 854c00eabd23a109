#include "parallel/tensor_parallel.h"

#include <algorithm>

#include "framework/core/error.h"

namespace hai {

TpRange tp_range(int64_t units, int tp, int rank) {
  HAI_CHECK(tp >= 1 && rank >= 0 && rank < tp && units >= 0, "tensor parallelism: rank {} of {} over {} units", rank,
            tp, units);
  int64_t per_rank = (units + tp - 1) / tp;
  int64_t begin = std::min(units, per_rank * rank);
  return {.begin = begin, .size = std::min(units, begin + per_rank) - begin};
}

void TensorParallel::sum(const Tensor& tensor) const {
  if (size() > 1) group_->all_reduce(tensor, ReduceOp::sum);
}

void TensorParallel::max(const Tensor& tensor) const {
  if (size() > 1) group_->all_reduce(tensor, ReduceOp::max);
}

}  // namespace hai
