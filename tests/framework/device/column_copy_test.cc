#include <gtest/gtest.h>

#include <vector>

#include "framework/device/column_copy.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

std::vector<float> values_of(const Tensor& tensor) {
  return {tensor.data<float>(), tensor.data<float>() + tensor.numel()};
}

TEST(ColumnCopy, SplitsColumnsOutOfRows) {
  OwnedTensor src = testing::tensor_of(Shape{2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});  // [T = 2, 4]
  OwnedTensor dst = testing::tensor_of(Shape{2, 3}, {0, 0, -1, 0, 0, -1});      // [T = 2, 3]
  copy_columns(dst, src, {.dst_offset = 0, .src_offset = 1, .width = 2});
  EXPECT_EQ(values_of(dst), (std::vector<float>{2, 3, -1, 6, 7, -1}));
}

TEST(ColumnCopy, BroadcastsOneRowPerTokenOverHeads) {
  OwnedTensor src = testing::tensor_of(Shape{2, 3}, {1, 2, 3, 4, 5, 6});           // [T = 2, 3]
  OwnedTensor dst = testing::tensor_of(Shape{2, 2, 2}, {0, 0, 0, 0, 0, 0, 0, 0});  // [T = 2, H = 2, 2]
  copy_columns(dst, src, {.dst_offset = 1, .src_offset = 2, .width = 1});
  EXPECT_EQ(values_of(dst), (std::vector<float>{0, 3, 0, 3, 0, 6, 0, 6}));
}

TEST(ColumnCopy, SumsHeadsIntoOneRowPerToken) {
  OwnedTensor src = testing::tensor_of(Shape{2, 3, 1}, {1, 2, 4, 8, 16, 32});  // [T = 2, H = 3, 1]
  OwnedTensor dst = testing::tensor_of(Shape{2, 2}, {-1, -1, -1, -1});         // [T = 2, 2]
  sum_columns(dst, src, {.dst_offset = 1, .src_offset = 0, .width = 1});
  EXPECT_EQ(values_of(dst), (std::vector<float>{-1, 7, -1, 56}));
}

// sum_columns is the adjoint of copy_columns: dot(copy(x), y) == dot(x, sum(y)) on the copied columns.
TEST(ColumnCopy, SumIsTheAdjointOfBroadcast) {
  ColumnBlock block{.dst_offset = 3, .src_offset = 1, .width = 4};
  OwnedTensor x = testing::random_tensor(Shape{5, 7}, 1);     // [T, 7]
  OwnedTensor y = testing::random_tensor(Shape{5, 3, 9}, 2);  // [T, H, 9]
  OwnedTensor copied(Shape{5, 3, 9}, DType::f32);             // zero outside the block
  copy_columns(copied, x, block);
  OwnedTensor summed(Shape{5, 7}, DType::f32);
  sum_columns(summed, y, {.dst_offset = 1, .src_offset = 3, .width = 4});
  EXPECT_NEAR(testing::dot(copied, y), testing::dot(x, summed), 1e-4);
}

// fp32 -> bf16 rounds each value once, bf16 -> fp32 widens exactly, bf16 -> bf16 keeps the bits.
TEST(ColumnCopy, ConvertsBetweenFp32AndBf16) {
  OwnedTensor src = testing::random_tensor(Shape{3, 10}, 5);  // [T, 10] fp32
  OwnedTensor narrow(Shape{3, 2, 6}, DType::bf16);             // [T, H = 2, 6]
  copy_columns(narrow, src, {.dst_offset = 0, .src_offset = 4, .width = 6});
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t c = 0; c < 6; ++c) {
      ASSERT_EQ(narrow.data<bf16>()[r * 6 + c].bits, float_to_bf16(src.data<float>()[(r / 2) * 10 + 4 + c]));
    }
  }
  OwnedTensor narrow_copy(Shape{3, 2, 4}, DType::bf16), wide(Shape{3, 2, 4}, DType::f32);
  copy_columns(narrow_copy, narrow, {.dst_offset = 1, .src_offset = 2, .width = 3});
  copy_columns(wide, narrow_copy, {.dst_offset = 1, .src_offset = 1, .width = 3});
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t c = 0; c < 3; ++c) {
      uint16_t bits = narrow.data<bf16>()[r * 6 + 2 + c].bits;
      EXPECT_EQ(narrow_copy.data<bf16>()[r * 4 + 1 + c].bits, bits);
      EXPECT_EQ(wide.data<float>()[r * 4 + 1 + c], bf16_to_float(bits));
    }
  }
  OwnedTensor half(Shape{3, 10}, DType::f16);
  EXPECT_THROW(copy_columns(half, src, {.width = 1}), Error);
  OwnedTensor narrow_sum(Shape{3, 10}, DType::bf16);
  EXPECT_THROW(sum_columns(narrow_sum, narrow, {.width = 1}), Error);  // sums stay fp32
}

TEST(ColumnCopy, RejectsBadBlocksAndRowCounts) {
  OwnedTensor src(Shape{2, 4}, DType::f32), dst(Shape{2, 3}, DType::f32), heads(Shape{2, 3, 4}, DType::f32);
  EXPECT_THROW(copy_columns(dst, src, {.dst_offset = 2, .src_offset = 0, .width = 2}), Error);
  EXPECT_THROW(copy_columns(dst, src, {.dst_offset = 0, .src_offset = 3, .width = 2}), Error);
  OwnedTensor other_tokens(Shape{3, 3}, DType::f32);
  EXPECT_THROW(copy_columns(other_tokens, src, {.width = 1}), Error);
  OwnedTensor two_heads(Shape{2, 2, 4}, DType::f32);
  EXPECT_THROW(copy_columns(two_heads, heads, {.width = 1}), Error);  // 2 rows per token from 3
  EXPECT_THROW(sum_columns(heads, src, {.width = 1}), Error);         // sums fewer rows into more
}

}  // namespace
}  // namespace hai
