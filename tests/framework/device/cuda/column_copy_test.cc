#include <gtest/gtest.h>

#include <string>

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

  for (DType dst_dtype : {DType::f32, DType::bf16}) {  // conversions: one rounding on either side, the same bits
    for (DType src_dtype : {DType::f32, DType::bf16}) {
      ParityCase converted;
      converted.output(testing::converted(testing::random_tensor(Shape{kTokens, kHeads, 40}, 5), dst_dtype), {});
      converted.input(testing::converted(testing::random_tensor(Shape{kTokens, kHeads, 30}, 6), src_dtype));
      converted.run([](const std::vector<Tensor>& t) { copy_columns(t[0], t[1], kBlock); },
                    "copy_columns_" + std::string(dtype_name(dst_dtype)) + "_from_" + std::string(dtype_name(src_dtype)));
    }
  }

  ParityCase sum;
  sum.output(testing::random_tensor(Shape{kTokens, 30}, 3), {});
  sum.input(testing::random_tensor(Shape{kTokens, kHeads, 40}, 4));
  sum.run([](const std::vector<Tensor>& t) { sum_columns(t[0], t[1], kBlock); }, "sum_columns");
}

}  // namespace
}  // namespace hai
