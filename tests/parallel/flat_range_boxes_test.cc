#include <gtest/gtest.h>

#include "parallel/flat_range_boxes.h"

namespace hai {
namespace {

SliceBox box(std::vector<int64_t> offsets, std::vector<int64_t> extents) { return {offsets, extents}; }

TEST(FlatRangeBoxes, WholeTensorIsOneBox) {
  std::vector<SliceBox> boxes = flat_range_boxes(Shape{3, 4}, 0, 12);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0], box({0, 0}, {3, 4}));
}

TEST(FlatRangeBoxes, PartialRowsAroundWholeRows) {
  // [3, 4], elements [2, 11): row 0 cols 2..3, rows 1 whole, row 2 cols 0..2.
  std::vector<SliceBox> boxes = flat_range_boxes(Shape{3, 4}, 2, 11);
  ASSERT_EQ(boxes.size(), 3u);
  EXPECT_EQ(boxes[0], box({0, 2}, {1, 2}));
  EXPECT_EQ(boxes[1], box({1, 0}, {1, 4}));
  EXPECT_EQ(boxes[2], box({2, 0}, {1, 3}));
}

TEST(FlatRangeBoxes, InsideOneRowAndThreeDims) {
  EXPECT_EQ(flat_range_boxes(Shape{3, 4}, 5, 7), (std::vector<SliceBox>{box({1, 1}, {1, 2})}));
  // [2, 2, 3] (12 elements), [1, 11): [0,0,1:3], [0,1,:], [1,0,:], [1,1,0:2].
  std::vector<SliceBox> boxes = flat_range_boxes(Shape{2, 2, 3}, 1, 11);
  ASSERT_EQ(boxes.size(), 4u);
  EXPECT_EQ(boxes[0], box({0, 0, 1}, {1, 1, 2}));
  EXPECT_EQ(boxes[1], box({0, 1, 0}, {1, 1, 3}));
  EXPECT_EQ(boxes[2], box({1, 0, 0}, {1, 1, 3}));
  EXPECT_EQ(boxes[3], box({1, 1, 0}, {1, 1, 2}));
}

TEST(FlatRangeBoxes, VolumesFollowTheRangeInOrder) {
  Shape shape{3, 5, 7};
  for (int64_t begin = 0; begin <= shape.numel(); begin += 8) {
    for (int64_t end = begin; end <= shape.numel(); end += 11) {
      int64_t flat = begin;
      for (const SliceBox& slice : flat_range_boxes(shape, begin, end)) {
        // The box's first element is the next flat element of the range.
        EXPECT_EQ((slice.offsets[0] * 5 + slice.offsets[1]) * 7 + slice.offsets[2], flat);
        flat += box_volume(slice);
      }
      EXPECT_EQ(flat, end) << begin << ".." << end;
    }
  }
  EXPECT_TRUE(flat_range_boxes(shape, 4, 4).empty());
}

}  // namespace
}  // namespace hai
