#include "framework/device/all_finite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace hai {
namespace {

int32_t flag_of(const std::vector<float>& values, int32_t initial = 0) {
  OwnedTensor x(Shape{static_cast<int64_t>(values.size())}, DType::f32);  // [n]
  for (size_t i = 0; i < values.size(); ++i) x.data<float>()[i] = values[i];
  OwnedTensor found(Shape{1}, DType::i32);
  found.data<int32_t>()[0] = initial;
  flag_non_finite(found, x);
  return found.data<int32_t>()[0];
}

TEST(FlagNonFiniteTest, FiniteValuesLeaveTheFlag) {
  EXPECT_EQ(flag_of({0.0f, -1.0f, 3.4e38f, -3.4e38f, 1e-45f}), 0);
  EXPECT_EQ(flag_of({}), 0);
  EXPECT_EQ(flag_of({1.0f}, /*initial=*/1), 1);  // a flag set by an earlier tensor stays set
}

TEST(FlagNonFiniteTest, InfinityOrNanSetsTheFlag) {
  EXPECT_EQ(flag_of({1.0f, std::numeric_limits<float>::infinity()}), 1);
  EXPECT_EQ(flag_of({-std::numeric_limits<float>::infinity(), 2.0f}), 1);
  EXPECT_EQ(flag_of({0.0f, 0.0f, std::nanf("")}), 1);
}

TEST(FlagNonFiniteTest, RefusesAFlagOfTheWrongShape) {
  OwnedTensor x(Shape{4}, DType::f32), found(Shape{2}, DType::i32);
  EXPECT_THROW(flag_non_finite(found, x), Error);
}

}  // namespace
}  // namespace hai
