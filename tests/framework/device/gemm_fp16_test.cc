// fp16 GEMM inputs (precision.mode fp16) are widened exactly: the product equals the fp32 GEMM of the rounded
// values, bit for bit (both sum in the same order).

#include <gtest/gtest.h>

#include <cstring>

#include "framework/device/gemm.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

TEST(GemmFp16, EqualsTheFp32GemmOfTheRoundedValues) {
  OwnedTensor a = testing::random_tensor(Shape{37, 70}, 1), b = testing::random_tensor(Shape{45, 70}, 2);
  OwnedTensor a_half(a.shape(), DType::f16), b_half(b.shape(), DType::f16);
  for (const auto& [full, half] : {std::pair{&a, &a_half}, std::pair{&b, &b_half}}) {
    for (int64_t i = 0; i < full->numel(); ++i) {
      half->data<fp16>()[i].bits = float_to_fp16(full->data<float>()[i]);
      full->data<float>()[i] = fp16_to_float(half->data<fp16>()[i].bits);  // the rounded value
    }
  }
  OwnedTensor c_half(Shape{37, 45}, DType::f32), c_full(Shape{37, 45}, DType::f32);
  gemm(c_half, a_half, b_half, {.transpose_b = true});
  gemm(c_full, a, b, {.transpose_b = true});
  EXPECT_EQ(std::memcmp(c_half.tensor().raw(), c_full.tensor().raw(), c_full.tensor().bytes()), 0);
}

}  // namespace
}  // namespace hai
