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

}  // namespace
}  // namespace hai
