#include <gtest/gtest.h>

#include <limits>

#include "framework/device/all_finite.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::copy_to;

int32_t gpu_flag(const Tensor& host_values) {
  OwnedTensor values = copy_to(host_values, Device::cuda(0));
  OwnedTensor found = zero_tensor(Shape{1}, DType::i32, Device::cuda(0));
  flag_non_finite(found, values);
  return copy_to(found, Device::cpu()).data<int32_t>()[0];
}

TEST(FlagNonFiniteParity, FindsOneNonFiniteElementAmongMillions) {
  HAI_REQUIRE_CUDA_DEVICE();
  OwnedTensor values = testing::random_tensor(Shape{3'000'001}, 5, 1e30f);  // [n]
  EXPECT_EQ(gpu_flag(values), 0);
  values.data<float>()[3'000'000] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(gpu_flag(values), 1);
  values.data<float>()[3'000'000] = 0.0f;
  values.data<float>()[12345] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(gpu_flag(values), 1);
}

}  // namespace
}  // namespace hai
