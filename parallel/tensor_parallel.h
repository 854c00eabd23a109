#pragma once
// Tensor parallelism's group and its two primitives (Megatron's f and g, TorchTitan's copy-to / reduce-from the
// tensor-parallel region), over the tp ranks of one (dp, pp) position (parallel/topology.h). A layer marks where its
// tensor-parallel region starts and ends, and otherwise reads like single-device code on its shard:
//   enter_backward(d_x): the region's input is copied to every rank (forward: nothing), so its gradient is the sum
//                        of the ranks' partial gradients (backward: all-reduce).
//   leave(y):            the region's output is the sum of the ranks' partial outputs (forward: all-reduce; the
//                        backward hands the same gradient to every rank: nothing).
// Both are identities on one rank (tp = 1, or no group). Which shard of a parameter a rank holds is decided once,
// in model/rank_share.h, from tp_range below.

#include <cstdint>

#include "framework/comm/communicator.h"
#include "framework/device/elementwise.h"
#include "framework/metrics/step_profiler.h"
#include "framework/tensor/tensor.h"

namespace hai {

// The part of a dimension of `units` units (heads, vocabulary rows, FFN columns) that tp rank `rank` of `tp` holds:
// every rank ceil(units / tp) units, the last ranks fewer when tp does not divide units (a vocabulary of 257 at
// tp 2: 129 and 128 rows). The padding is only in the ranges: no rank stores or computes a padded row.
struct TpRange {
  int64_t begin = 0;
  int64_t size = 0;
};
TpRange tp_range(int64_t units, int tp, int rank);

class TensorParallel {
 public:
  TensorParallel() = default;  // one rank
  // group: the tp group (outlives this), or null for one rank. sequence_parallel: the layers outside the
  // tensor-parallel regions run on this rank's tokens only (parallel/sequence_parallel.h). profiler (outlives this,
  // may be null): where the profiler of the running step is while one runs (else null); every collective below
  // (the all-reduces, and sequence parallelism's all-gathers and reduce-scatters) is then charged to the phase
  // "<pass>.tp_collective" (the running phase's pass), which resumes after each.
  explicit TensorParallel(Communicator* group, bool sequence_parallel = false, StepProfiler* const* profiler = nullptr)
      : group_(group), sequence_parallel_(sequence_parallel), profiler_(profiler) {}

  int size() const { return group_ != nullptr ? group_->size() : 1; }
  int rank() const { return group_ != nullptr ? group_->rank() : 0; }
  // This rank's part of `units` units (tp_range).
  TpRange range(int64_t units) const { return tp_range(units, size(), rank()); }
  // Whether the tokens are split over the tp ranks outside the regions (sequence parallelism, more than one rank).
  bool splits_sequence() const { return sequence_parallel_ && size() > 1; }

  // The backward of entering the region: d_x (any shape, fp32/bf16) summed over the tp ranks, in place.
  void enter_backward(const Tensor& d_x) const { sum(d_x); }
  // Leaving the region: y (any shape) summed over the tp ranks, in place.
  void leave(const Tensor& y) const { sum(y); }
  // out: fp32 (overwritten, or with accumulate added to) <- the sum over the tp ranks of the partial result that
  // write(y, accumulate) puts into y (a region's exit or entry gradient that a GEMM adds to out). On one rank
  // write goes to out itself (the GEMM's own beta 1).
  template <typename Write>
  void summed_into(const Tensor& out, bool accumulate, Write&& write) const {
    if (size() == 1) return write(out, accumulate);
    if (!accumulate) {
      write(out, false);
      return sum(out);
    }
    OwnedTensor partial(out.shape(), out.dtype(), out.device());
    write(partial.tensor(), false);
    sum(partial);
    add_scaled(out, partial);
  }
  // In place element-wise sum / max over the tp ranks (identities on one rank).
  void sum(const Tensor& tensor) const;
  void max(const Tensor& tensor) const;
  // The row moves of sequence parallelism (parallel/sequence_parallel.h), Communicator's contract over the tp group:
  // out [size() n, ...] <- every rank's in [n, ...] in rank order (any dtype); out [n, ...] <- chunk rank() of the
  // sum over the ranks of in [size() n, ...] (reducible dtype). On one rank both copy in to out.
  void all_gather(const Tensor& out, const Tensor& in) const;
  void reduce_scatter(const Tensor& out, const Tensor& in) const;

 private:
  void all_reduce(const Tensor& tensor, ReduceOp op) const;
  // Runs one collective of the group, charged to "<pass>.tp_collective" while a step is profiled.
  template <typename Collective>
  void charged(Collective&& collective) const;

  Communicator* group_ = nullptr;
  bool sequence_parallel_ = false;
  StepProfiler* const* profiler_ = nullptr;
};

}  // namespace hai
