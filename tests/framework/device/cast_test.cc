#include <gtest/gtest.h>

#include "framework/device/cast.h"

namespace hai {
namespace {

TEST(Cast, RoundsToNearestEvenBothWays) {
  OwnedTensor x(Shape{4}, DType::f32), as_bf16(Shape{2, 2}, DType::bf16), back(Shape{4}, DType::f32);
  float values[4] = {1.0f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -3.5f};
  for (int i = 0; i < 4; ++i) x.data<float>()[i] = values[i];
  cast_tensor(as_bf16, x);
  cast_tensor(back, as_bf16);
  EXPECT_EQ(back.data<float>()[0], 1.0f);
  EXPECT_EQ(back.data<float>()[1], 1.0f);               // tie to even
  EXPECT_EQ(back.data<float>()[2], 1.0f + 4.0f / 256);  // tie to even (up)
  EXPECT_EQ(back.data<float>()[3], -3.5f);
  OwnedTensor as_fp16(Shape{4}, DType::f16);
  cast_tensor(as_fp16, as_bf16);
  EXPECT_EQ(as_fp16.data<fp16>()[3].bits, float_to_fp16(-3.5f));
}

TEST(Cast, RejectsMismatches) {
  OwnedTensor x(Shape{4}, DType::f32), y(Shape{5}, DType::bf16), ids(Shape{4}, DType::i32);
  EXPECT_THROW(cast_tensor(y, x), Error);
  EXPECT_THROW(cast_tensor(ids, x), Error);
}

}  // namespace
}  // namespace hai
