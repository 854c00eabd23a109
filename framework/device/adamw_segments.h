#pragma once
// The work list of the multi-tensor AdamW step (fused_adamw.h). A segment is a run of elements contiguous in the
// values (and their compute copy) and in the gradients and moments, with one weight decay; a partition of a flat
// parameter layout is a few hundred of them. The table cuts them into runs of at most kAdamWRunElements (one CUDA
// block's work each; a run after a segment's first starts at a value offset that is a multiple of 4, so that vector
// loads apply) and keeps them on the step's device as [runs, 4] i64 rows (value_offset, state_offset, numel,
// weight_decay 0 or 1). It is built once per partition; each step reads it.

#include <cstdint>
#include <span>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hai {

struct AdamWSegment {
  int64_t value_offset = 0;  // into the values and the compute copy
  int64_t state_offset = 0;  // into the gradients and both moments
  int64_t numel = 0;
  bool weight_decay = false;
};

inline constexpr int64_t kAdamWRunElements = 8192;
inline constexpr int64_t kAdamWRunColumns = 4;  // value_offset, state_offset, numel, weight_decay

// The runs of `segments`, in order: each segment cut at value offsets that are multiples of 4 into pieces of at
// most kAdamWRunElements; empty segments dropped. Throws on a negative offset or length.
std::vector<AdamWSegment> adamw_runs(std::span<const AdamWSegment> segments);

class AdamWSegmentTable {
 public:
  AdamWSegmentTable() = default;  // no runs
  // The segments must not overlap (each element is updated once).
  AdamWSegmentTable(std::span<const AdamWSegment> segments, Device device);

  Tensor runs() const { return runs_.tensor(); }  // [run_count(), 4] i64 on the device
  int64_t run_count() const { return run_count_; }
  int64_t value_end() const { return value_end_; }  // the values the runs reach: [0, value_end())
  int64_t state_end() const { return state_end_; }  // the gradients and moments they reach
  Device device() const { return device_; }

 private:
  OwnedTensor runs_;
  int64_t run_count_ = 0;
  int64_t value_end_ = 0;
  int64_t state_end_ = 0;
  Device device_;
};

}  // namespace hai
