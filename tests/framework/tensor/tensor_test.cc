#include <gtest/gtest.h>

#include <optional>

#include "framework/tensor/tensor.h"

namespace hai {
namespace {

TEST(Shape, BasicsAndNegativeDims) {
  Shape shape{2, 3, 4};
  EXPECT_EQ(shape.rank(), 3);
  EXPECT_EQ(shape.numel(), 24);
  EXPECT_EQ(shape[-1], 4);
  EXPECT_EQ(shape.str(), "[2, 3, 4]");
  EXPECT_THROW(shape[3], Error);
  EXPECT_THROW((Shape{1, -2}), Error);
}

TEST(Tensor, TypedAccessReshapeAndSlice) {
  OwnedTensor owned(Shape{4, 3}, DType::f32);
  Tensor t = owned;
  for (int i = 0; i < 12; ++i) t.data<float>()[i] = static_cast<float>(i);
  EXPECT_THROW(t.data<bf16>(), Error);
  Tensor rows = t.slice(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 3}));
  EXPECT_EQ(rows.data<float>()[0], 3.0f);
  EXPECT_EQ(t.reshape(Shape{12}).data<float>()[11], 11.0f);
  EXPECT_THROW(t.reshape(Shape{5}), Error);
  EXPECT_THROW(t.slice(2, 5), Error);
  EXPECT_EQ(t.bytes(), 48u);
  EXPECT_EQ(t.str(), "[4, 3] fp32 cpu");
}

// Two adjacent blocks of one buffer are one tensor of their rows; anything else is not.
TEST(Tensor, RowsStackedInPlaceOnlyWhenAdjacent) {
  OwnedTensor buffer(Shape{10, 3}, DType::f32);
  Tensor all = buffer.tensor();
  std::optional<Tensor> both = rows_stacked_in_place(all.slice(0, 4), all.slice(4, 10));
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->shape(), (Shape{10, 3}));
  EXPECT_EQ(both->raw(), all.raw());
  EXPECT_FALSE(rows_stacked_in_place(all.slice(0, 4), all.slice(5, 10)).has_value());  // a gap
  EXPECT_FALSE(rows_stacked_in_place(all.slice(4, 10), all.slice(0, 4)).has_value());  // the wrong order
  EXPECT_FALSE(rows_stacked_in_place(all.slice(0, 4), all.slice(4, 10).reshape(Shape{9, 2})).has_value());
}

TEST(Buffer, ViewsMustFitAndCpuIsZeroed) {
  Buffer buffer(64, Device::cpu());
  Tensor view = buffer.view(Shape{8}, DType::bf16, 48);
  EXPECT_EQ(view.data<bf16>()[7].bits, 0);
  EXPECT_THROW(buffer.view(Shape{9}, DType::bf16, 48), Error);
  Buffer moved = std::move(buffer);
  EXPECT_EQ(moved.bytes(), 64u);
  EXPECT_EQ(buffer.data(), nullptr);
}

TEST(Tensor, CopyChecksShapes) {
  OwnedTensor a(Shape{3}, DType::i32), b(Shape{3}, DType::i32), c(Shape{4}, DType::i32);
  a.data<int32_t>()[2] = 7;
  copy_tensor(b, a);
  EXPECT_EQ(b.data<int32_t>()[2], 7);
  EXPECT_THROW(copy_tensor(c, a), Error);
}

}  // namespace
}  // namespace hai
