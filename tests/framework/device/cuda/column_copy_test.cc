#include <gtest/gtest.h>

#include "framework/device/column_copy.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;

constexpr int64_t kTokens = 13;
constexpr int64_t kHeads = 7;
constexpr ColumnBlock kBlock{.dst_offset = 5, .src_offset = 3, .width = 20};

// Copies are exact, and both sides add a group's rows in the same order: bit-identical. The destination starts
// random, so the columns outside the block are checked to stay.
TEST(CudaColumnCopy, CopyBroadcastsAndSumReducesExactly) {
  HAI_REQUIRE_CUDA_DEVICE();
  ParityCase copy;
  copy.output(testing::random_tensor(Shape{kTokens, kHeads, 40}, 1), {});
  copy.input(testing::random_tensor(Shape{kTokens, 30}, 2));
  copy.run([](const std::vector<Tensor>& t) { copy_columns(t[0], t[1], kBlock); }, "copy_columns_broadcast");

  ParityCase sum;
  sum.output(testing::random_tensor(Shape{kTokens, 30}, 3), {});
  sum.input(testing::random_tensor(Shape{kTokens, kHeads, 40}, 4));
  sum.run([](const std::vector<Tensor>& t) { sum_columns(t[0], t[1], kBlock); }, "sum_columns");
}

}  // namespace
}  // namespace hai
