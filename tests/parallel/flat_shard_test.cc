#include <gtest/gtest.h>

#include "parallel/flat_shard.h"
#include "tests/parallel/zero1_test_util.h"

namespace hai {
namespace {

TEST(FlatShard, ChunksArePaddedToTheGroupSize) {
  // 39 elements over 4 ranks: chunks of 10, the last rank owns 9.
  FlatShard last = flat_shard(39, 3, 4);
  EXPECT_EQ(last.chunk, 10);
  EXPECT_EQ(last.begin, 30);
  EXPECT_EQ(last.end, 39);
  EXPECT_EQ(flat_shard(39, 1, 4).begin, 10);
  EXPECT_EQ(flat_shard(39, 1, 4).numel(), 10);
  // 2 elements over 4 ranks: chunks of 1, ranks 2 and 3 own nothing.
  EXPECT_EQ(flat_shard(2, 3, 4).numel(), 0);
  EXPECT_EQ(flat_shard(2, 3, 4).begin, 2);
  EXPECT_EQ(flat_shard(39, 0, 1).numel(), 39);
}

TEST(FlatShard, SegmentsSplitParametersAtTheShardAndSkipFrozenOnes) {
  ParameterStore store(testing::optimizer_test_specs(), Device::cpu());
  // Gradient layout: w.weight [0, 12), w.norm [12, 16), x.bias [16, 19), experts [19, 39).
  // Value layout: w.weight [0, 12), w.norm [12, 16), gate.bias [16, 18), x.bias [18, 21), experts [21, 41).
  std::vector<ShardSegment> segments = shard_segments(store, 10, 30);
  ASSERT_EQ(segments.size(), 4u);
  EXPECT_EQ(segments[0].grad_offset, 10);  // the tail of w.weight
  EXPECT_EQ(segments[0].value_offset, 10);
  EXPECT_EQ(segments[0].numel, 2);
  EXPECT_TRUE(segments[0].weight_decay);
  EXPECT_EQ(segments[1].grad_offset, 12);  // w.norm and x.bias: no decay, not contiguous in values
  EXPECT_EQ(segments[1].numel, 4);
  EXPECT_FALSE(segments[1].weight_decay);
  EXPECT_EQ(segments[2].grad_offset, 16);
  EXPECT_EQ(segments[2].value_offset, 18);
  EXPECT_EQ(segments[2].numel, 3);
  EXPECT_EQ(segments[3].grad_offset, 19);  // the head of the experts
  EXPECT_EQ(segments[3].value_offset, 21);
  EXPECT_EQ(segments[3].numel, 11);
  std::vector<ShardSegment> experts = shard_segments(store, 19, 39);  // two experts merge into one run
  ASSERT_EQ(experts.size(), 1u);
  EXPECT_EQ(experts[0].value_offset, 21);
  EXPECT_EQ(experts[0].numel, 20);
  EXPECT_TRUE(shard_segments(store, 5, 5).empty());
}

}  // namespace
}  // namespace hai
