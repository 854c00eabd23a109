#include "framework/checkpoint/slice_box.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "tests/framework/checkpoint/checkpoint_test_util.h"

namespace hai {
namespace {

using testing::expect_error;

std::span<const std::byte> bytes_of(const std::vector<int>& values) { return std::as_bytes(std::span(values)); }
std::span<std::byte> bytes_of(std::vector<int>& values) { return std::as_writable_bytes(std::span(values)); }

TEST(SliceBox, VolumeAndText) {
  SliceBox box{{1, 2}, {3, 4}};
  EXPECT_EQ(box_volume(box), 12);
  EXPECT_EQ(box_str(box), "[1:4, 2:6]");
  EXPECT_EQ(box_volume(whole_box({})), 1);  // a scalar
  EXPECT_EQ(whole_box({5, 6}), (SliceBox{{0, 0}, {5, 6}}));
}

TEST(SliceBox, Intersection) {
  EXPECT_EQ(box_intersection({{0, 0}, {4, 4}}, {{2, 3}, {4, 4}}), (SliceBox{{2, 3}, {2, 1}}));
  EXPECT_EQ(box_intersection({{0, 0}, {2, 4}}, {{2, 0}, {2, 4}}), std::nullopt);  // touching rows only
  EXPECT_EQ(box_intersection({{}, {}}, {{}, {}}), (SliceBox{{}, {}}));
}

TEST(SliceBox, CopiesARegionBetweenBuffersOfDifferentBoxes) {
  // The global tensor is 4 x 5 with value 10 * row + column; the source holds rows 1..3, columns 1..4.
  SliceBox source_box{{1, 1}, {3, 4}};
  std::vector<int> source;
  for (int row = 1; row < 4; ++row) {
    for (int column = 1; column < 5; ++column) source.push_back(10 * row + column);
  }
  SliceBox destination_box{{2, 0}, {2, 5}};  // rows 2..3, all columns
  std::vector<int> destination(10, -1);
  SliceBox region = *box_intersection(source_box, destination_box);
  copy_box_region(bytes_of(std::as_const(source)), source_box, bytes_of(destination), destination_box, region, sizeof(int));
  EXPECT_EQ(destination, (std::vector<int>{-1, 21, 22, 23, 24, -1, 31, 32, 33, 34}));
}

TEST(SliceBox, TilingChecks) {
  std::vector<int64_t> shape = {4, 6};
  check_boxes_tile({{{0, 0}, {4, 3}}, {{0, 3}, {4, 3}}}, shape, "t");
  check_boxes_tile({{{0, 0}, {4, 6}}, {{2, 2}, {0, 3}}}, shape, "t");  // an empty slice is harmless
  expect_error([&] { check_boxes_tile({{{0, 0}, {4, 3}}}, shape, "t"); }, {"t:", "cover 12 of 24"});
  expect_error([&] { check_boxes_tile({{{0, 0}, {4, 4}}, {{0, 3}, {4, 3}}}, shape, "t"); },
               {"[0:4, 0:4] and [0:4, 3:6] overlap"});
  expect_error([&] { check_boxes_tile({{{0, 4}, {4, 3}}}, shape, "t"); }, {"[0:4, 4:7] is outside"});
  expect_error([&] { check_boxes_tile({{{0}, {4}}}, shape, "t"); }, {"rank 1"});
}

}  // namespace
}  // namespace hai
