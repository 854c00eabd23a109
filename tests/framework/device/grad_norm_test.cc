#include <gtest/gtest.h>

#include "framework/device/grad_norm.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

TEST(GradNorm, SumsSquaresOverAllTensors) {
  OwnedTensor a = testing::tensor_of(Shape{2}, {3, 4});
  OwnedTensor b = testing::tensor_of(Shape{1, 1}, {-12});
  OwnedTensor empty(Shape{0}, DType::f32);
  EXPECT_EQ(grad_norm_squared({a, b, empty}), 169.0);
  EXPECT_EQ(grad_norm_squared({}), 0.0);
}

TEST(GradNorm, AccumulatesInDouble) {
  // 2^24 + 1 is not a float: a float accumulator would lose the 1.
  OwnedTensor values = testing::tensor_of(Shape{2}, {4096, 1});
  EXPECT_EQ(grad_norm_squared({values}), 16777217.0);
}

TEST(GradNorm, RejectsNonFp32) {
  OwnedTensor ids(Shape{2}, DType::i32);
  EXPECT_THROW(grad_norm_squared({ids}), Error);
}

}  // namespace
}  // namespace hai
