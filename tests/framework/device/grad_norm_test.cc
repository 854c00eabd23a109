#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

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

TEST(GradNorm, AnInfOrNaNMakesTheSumNonFinite) {
  // The trainer's finite check: one bad element among finite ones.
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    OwnedTensor values = testing::tensor_of(Shape{3}, {1, bad, 2});
    EXPECT_FALSE(std::isfinite(grad_norm_squared({values})));
  }
  OwnedTensor largest = testing::tensor_of(Shape{2}, {3.4e38f, -3.4e38f});  // squares overflow fp32, not double
  EXPECT_TRUE(std::isfinite(grad_norm_squared({largest})));
}

TEST(GradNorm, NeedsNoScratchOnTheCpu) {
  OwnedTensor a = testing::tensor_of(Shape{2}, {3, 4});
  EXPECT_EQ(grad_norm_scratch_size({a}), 0);
  EXPECT_EQ(grad_norm_squared({a}, Tensor()), 25.0);
}

// The sum written to a tensor (kept on the device by the training step) as a double's bits; 0 for no tensors.
TEST(GradNorm, WritesTheSumToATensor) {
  OwnedTensor a = testing::tensor_of(Shape{2}, {3, 4});
  OwnedTensor b = testing::tensor_of(Shape{1, 1}, {-12});
  OwnedTensor total(Shape{1}, DType::i64);
  grad_norm_squared_to(total, {a, b}, Tensor());
  EXPECT_EQ(std::bit_cast<double>(total.data<int64_t>()[0]), 169.0);
  grad_norm_squared_to(total, {}, Tensor());
  EXPECT_EQ(std::bit_cast<double>(total.data<int64_t>()[0]), 0.0);
  OwnedTensor f32_total(Shape{1}, DType::f32);
  EXPECT_THROW(grad_norm_squared_to(f32_total, {a}, Tensor()), Error);
}

TEST(GradNorm, RejectsNonFp32) {
  OwnedTensor ids(Shape{2}, DType::i32);
  EXPECT_THROW(grad_norm_squared({ids}), Error);
}

}  // namespace
}  // namespace hai
