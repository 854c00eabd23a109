#include "parallel/flat_shard.h"

#include <algorithm>

#include "framework/core/error.h"

namespace hai {
namespace {

bool extends(const ShardSegment& last, const ShardSegment& next) {
  return last.value_offset + last.numel == next.value_offset && last.grad_offset + last.numel == next.grad_offset &&
         last.weight_decay == next.weight_decay;
}

}  // namespace

FlatShard flat_shard(int64_t total, int rank, int size) {
  HAI_CHECK(size >= 1 && rank >= 0 && rank < size, "rank {} of a group of {}", rank, size);
  HAI_CHECK(total >= 0, "a flat layout of {} elements", total);
  FlatShard shard;
  shard.total = total;
  shard.chunk = (total + size - 1) / size;
  shard.begin = std::min(total, rank * shard.chunk);
  shard.end = std::min(total, (rank + 1) * shard.chunk);
  return shard;
}

std::vector<ShardSegment> shard_segments(const ParameterStore& store, int64_t begin, int64_t end) {
  std::vector<ShardSegment> segments;
  for (const Parameter& parameter : store.parameters()) {
    if (!parameter.spec.trainable) continue;
    int64_t first = std::max(begin, parameter.grad_offset);
    int64_t last = std::min(end, parameter.grad_offset + parameter.spec.shape.numel());
    if (first >= last) continue;
    ShardSegment segment{.value_offset = parameter.offset + (first - parameter.grad_offset),
                         .grad_offset = first,
                         .numel = last - first,
                         .weight_decay = parameter.spec.weight_decay};
    if (!segments.empty() && extends(segments.back(), segment)) {
      segments.back().numel += segment.numel;
    } else {
      segments.push_back(segment);
    }
  }
  return segments;
}

}  // namespace hai
