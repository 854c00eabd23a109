#pragma once
// A range of a tensor's row-major (flat) elements as rectangular slices, for checkpointing a ZeRO-1 shard, which
// may start and end inside a parameter, under the parameter's own global name and shape.

#include <cstdint>
#include <vector>

#include "framework/checkpoint/slice_box.h"
#include "framework/tensor/tensor.h"

namespace hai {

// The boxes covering the flat elements [begin, end) of `shape`, in flat order: box k holds the elements
// [begin + v_0 + ... + v_{k-1}, ... + v_k) where v_i is box i's volume, so each box is a contiguous run of the
// flat range. At most 2 * rank - 1 boxes (a partial row, whole rows, a partial row, recursively); none when the
// range is empty. 0 <= begin <= end <= shape.numel().
std::vector<SliceBox> flat_range_boxes(const Shape& shape, int64_t begin, int64_t end);

}  // namespace hai
