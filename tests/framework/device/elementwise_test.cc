#include <gtest/gtest.h>

#include "framework/device/elementwise.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

TEST(Elementwise, ScaleTensor) {
  OwnedTensor t = testing::tensor_of(Shape{3, 1}, {1, -2, 0.5f});
  scale_tensor(t, 0.25f);
  EXPECT_EQ(t.data<float>()[0], 0.25f);
  EXPECT_EQ(t.data<float>()[1], -0.5f);
  EXPECT_EQ(t.data<float>()[2], 0.125f);
}

TEST(Elementwise, AddScaled) {
  OwnedTensor y = testing::tensor_of(Shape{1, 3}, {1, 2, 3});
  OwnedTensor x = testing::tensor_of(Shape{1, 3}, {10, 20, -30});
  add_scaled(y, x, 0.5f);
  EXPECT_EQ(y.data<float>()[0], 6.0f);
  EXPECT_EQ(y.data<float>()[1], 12.0f);
  EXPECT_EQ(y.data<float>()[2], -12.0f);
  add_scaled(y, x);
  EXPECT_EQ(y.data<float>()[0], 16.0f);
}

TEST(Elementwise, AddScaledRejectsMismatchedShapes) {
  OwnedTensor y(Shape{2, 3}, DType::f32), x(Shape{3, 2}, DType::f32);
  EXPECT_THROW(add_scaled(y, x), Error);
}

TEST(Elementwise, FillTensor) {
  OwnedTensor t = testing::tensor_of(Shape{2, 2}, {1, 2, 3, 4});
  fill_tensor(t, -0.75f);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(t.data<float>()[i], -0.75f);
}

TEST(Elementwise, AccumulateSumAddsTheScaledSumInDouble) {
  OwnedTensor total = testing::tensor_of(Shape{1}, {2.0f});
  // 1e8 + 1 + 1 - 1e8: in fp32 left to right the ones would be lost; in double they are kept.
  OwnedTensor x = testing::tensor_of(Shape{2, 2}, {1e8f, 1.0f, 1.0f, -1e8f});
  accumulate_sum(total, x, 0.5f);
  EXPECT_EQ(total.data<float>()[0], 3.0f);
  accumulate_sum(total, x);
  EXPECT_EQ(total.data<float>()[0], 5.0f);
  OwnedTensor wide(Shape{2}, DType::f32);
  EXPECT_THROW(accumulate_sum(wide, x), Error);
}

}  // namespace
}  // namespace hai
