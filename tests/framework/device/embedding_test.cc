#include <gtest/gtest.h>

#include "framework/device/embedding.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// table[v, d] = 10 v + d
OwnedTensor counting_table(int64_t vocab, int64_t width) {
  OwnedTensor table(Shape{vocab, width}, DType::f32);
  for (int64_t v = 0; v < vocab; ++v) {
    for (int64_t d = 0; d < width; ++d) table.data<float>()[v * width + d] = static_cast<float>(10 * v + d);
  }
  return table;
}

TEST(Embedding, ForwardGathersRows) {
  OwnedTensor table = counting_table(4, 3);
  OwnedTensor ids = testing::indices_of({2, 0, 2, 3});
  OwnedTensor out(Shape{4, 3}, DType::f32);
  embedding_forward(out, table, ids);
  float expected[4][3] = {{20, 21, 22}, {0, 1, 2}, {20, 21, 22}, {30, 31, 32}};
  for (int t = 0; t < 4; ++t) {
    for (int d = 0; d < 3; ++d) EXPECT_EQ(out.data<float>()[t * 3 + d], expected[t][d]);
  }
}

TEST(Embedding, BackwardAccumulatesRepeatedIds) {
  OwnedTensor d_table = testing::tensor_of(Shape{3, 2}, {1, 1, 1, 1, 1, 1});
  OwnedTensor d_out = testing::tensor_of(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  OwnedTensor ids = testing::indices_of({2, 0, 2});
  embedding_backward(d_table, d_out, ids);
  float expected[6] = {4, 5, 1, 1, 7, 9};  // row 0 += (3, 4); row 1 untouched; row 2 += (1, 2) + (5, 6)
  for (int i = 0; i < 6; ++i) EXPECT_EQ(d_table.data<float>()[i], expected[i]);
}

TEST(Embedding, BackwardMatchesFiniteDifferences) {
  OwnedTensor table = testing::random_tensor(Shape{5, 7}, 1);
  OwnedTensor ids = testing::indices_of({4, 1, 4, 0, 3, 4});
  OwnedTensor d_out = testing::random_tensor(Shape{6, 7}, 2);
  OwnedTensor out(Shape{6, 7}, DType::f32), d_table(Shape{5, 7}, DType::f32);
  embedding_backward(d_table, d_out, ids);
  auto loss = [&] {
    embedding_forward(out, table, ids);
    return testing::dot(out, d_out);
  };
  testing::check_gradient(table, d_table, loss, 1e-2, 1e-4, 1e-4);
}

TEST(Embedding, SingleTokenOfOddWidth) {
  OwnedTensor table = counting_table(2, 1);
  OwnedTensor out(Shape{1, 1}, DType::f32);
  embedding_forward(out, table, testing::indices_of({1}));
  EXPECT_EQ(out.data<float>()[0], 10.0f);
}

TEST(Embedding, RejectsOutOfRangeIds) {
  OwnedTensor table(Shape{4, 3}, DType::f32), out(Shape{1, 3}, DType::f32);
  EXPECT_THROW(embedding_forward(out, table, testing::indices_of({4})), Error);
  EXPECT_THROW(embedding_forward(out, table, testing::indices_of({-1})), Error);
  EXPECT_THROW(embedding_backward(table, out, testing::indices_of({7})), Error);
  EXPECT_THROW(embedding_forward(out, table, testing::indices_of({0, 1})), Error);  // 2 ids, 1 output row
}

}  // namespace
}  // namespace hai
