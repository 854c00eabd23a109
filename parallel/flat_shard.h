#pragma once
// The ZeRO-1 split of the flat gradient layout ([N_trainable], ParameterStore::grads()) over the ranks of a
// data-parallel group. The layout is padded to a multiple of the group size, padded = ceil(N / dp) * dp, and cut
// into dp chunks of padded / dp elements: rank r owns the trainable elements [r * chunk, min((r + 1) * chunk, N))
// (the last ranks may own fewer, or none). A chunk boundary may fall inside a parameter.

#include <cstdint>
#include <vector>

#include "framework/params/parameter_store.h"

namespace hai {

struct FlatShard {
  int64_t total = 0;  // N: elements of the unpadded layout
  int64_t chunk = 0;  // padded / dp
  int64_t begin = 0;  // the owned elements [begin, end)
  int64_t end = 0;

  int64_t numel() const { return end - begin; }
};

// rank in [0, size); total >= 0.
FlatShard flat_shard(int64_t total, int rank, int size);

// A run of trainable elements contiguous in both the value and the gradient buffer, with one weight decay.
struct ShardSegment {
  int64_t value_offset = 0;  // into ParameterStore::values()
  int64_t grad_offset = 0;   // into the flat gradient layout
  int64_t numel = 0;
  bool weight_decay = false;
};

// The trainable elements [begin, end) of the gradient layout as segments, in layout order; adjacent parameters
// with the same weight decay that are contiguous in both buffers are merged.
std::vector<ShardSegment> shard_segments(const ParameterStore& store, int64_t begin, int64_t end);

}  // namespace hai
