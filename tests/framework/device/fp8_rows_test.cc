// Fp8Rows (framework/device/fp8_rows.h): quantize_rows is quantize_1x128 into buffers it owns, and dequantize_rows
// gives back dequantize_1x128's fp32 values of them, bit for bit (what SwiGLU's backward reads of the gate and up
// cached in FP8).

#include <gtest/gtest.h>

#include "framework/device/fp8_quantize.h"
#include "framework/device/fp8_rows.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

TEST(Fp8Rows, DequantizeRowsIsTheOneByOneTwentyEightRoundTrip) {
  OwnedTensor x = testing::random_tensor(Shape{5, 300}, 3);  // [R, K], a partial last tile
  Fp8Rows rows = quantize_rows(x, /*pow2_scales=*/false);
  OwnedTensor q(Shape{5, 300}, DType::e4m3), scales(Shape{5, 3}, DType::f32);
  quantize_1x128(q, scales, x);
  EXPECT_TRUE(testing::same_bytes(rows.values, q));
  EXPECT_TRUE(testing::same_bytes(rows.scales, scales));
  OwnedTensor expected(Shape{5, 300}, DType::f32);
  dequantize_1x128(expected, q, scales);
  OwnedTensor values = dequantize_rows(rows);
  EXPECT_EQ(values.tensor().dtype(), DType::f32);
  EXPECT_TRUE(testing::same_bytes(values, expected));
}

}  // namespace
}  // namespace hai
