#include <gtest/gtest.h>

#include <cmath>

#include "framework/metrics/expert_load_stats.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

TEST(ExpertLoadStats, MinMaxAndCoefficientOfVariation) {
  // Mean 5, population variance (9 + 1 + 1 + 9) / 4 = 5.
  ExpertLoadStats stats = expert_load_stats(testing::indices_of({2, 4, 6, 8}));
  EXPECT_EQ(stats.min, 2);
  EXPECT_EQ(stats.max, 8);
  EXPECT_DOUBLE_EQ(stats.cv, std::sqrt(5.0) / 5.0);
}

TEST(ExpertLoadStats, BalancedAndEmptyLoadsHaveZeroCv) {
  ExpertLoadStats balanced = expert_load_stats(testing::indices_of({7, 7, 7}));
  EXPECT_EQ(balanced.min, 7);
  EXPECT_EQ(balanced.max, 7);
  EXPECT_EQ(balanced.cv, 0.0);
  EXPECT_EQ(expert_load_stats(testing::indices_of({0, 0})).cv, 0.0);
  ExpertLoadStats one_hot = expert_load_stats(testing::indices_of({0, 0, 0, 12}));
  EXPECT_DOUBLE_EQ(one_hot.cv, std::sqrt(3.0));  // mean 3, variance (9 + 9 + 9 + 81) / 4 = 27
}

TEST(ExpertLoadStats, RejectsEmptyAndWrongTypes) {
  OwnedTensor empty(Shape{0}, DType::i32);
  EXPECT_THROW(expert_load_stats(empty), Error);
  EXPECT_THROW(expert_load_stats(testing::tensor_of(Shape{2}, {1.0f, 2.0f})), Error);
}

}  // namespace
}  // namespace hai
