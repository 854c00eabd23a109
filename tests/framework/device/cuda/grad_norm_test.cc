#include <gtest/gtest.h>

#include <bit>
#include <vector>

#include "framework/device/grad_norm.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

std::vector<Tensor> views(const std::vector<OwnedTensor>& owned) { return {owned.begin(), owned.end()}; }

// Both sum squares (exact in double) in double; only the order of the additions differs: ~1e-15 relative.
// An empty tensor among them adds nothing.
TEST(CudaGradNorm, MatchesCpuOnManyTensorsOfAwkwardSizes) {
  HAI_REQUIRE_CUDA_DEVICE();
  std::vector<OwnedTensor> host;
  uint64_t seed = 301;
  for (int64_t count : {1, 1000, 4097, 3 * (1 << 20) + 7, 77}) {
    host.push_back(testing::random_tensor(Shape{count}, seed++, 1e-3f));
  }
  std::vector<OwnedTensor> device;
  for (const OwnedTensor& tensor : host) device.push_back(testing::copy_to(tensor, Device::cuda(0)));
  std::vector<Tensor> device_views = views(device);
  device_views.insert(device_views.begin() + 2, Tensor(nullptr, Shape{0}, DType::f32, Device::cuda(0)));
  double expected = grad_norm_squared(views(host));
  double actual = grad_norm_squared(device_views);
  std::printf("[ parity ] grad_norm_squared: cpu %.17g, gpu %.17g\n", expected, actual);
  EXPECT_NEAR(actual, expected, 1e-12 * expected);
}

// One scratch serves every call over the same tensors (the training loop's use); too small a scratch is refused.
TEST(CudaGradNorm, ReusesTheCallersScratch) {
  HAI_REQUIRE_CUDA_DEVICE();
  OwnedTensor host = testing::random_tensor(Shape{1 << 20}, 401, 1e-2f);
  OwnedTensor on_gpu = testing::copy_to(host, Device::cuda(0));
  int64_t words = grad_norm_scratch_size({on_gpu});
  EXPECT_GE(words, 2);  // a partial sum or more, and the total
  OwnedTensor scratch(Shape{words}, DType::i64, Device::cuda(0));
  double first = grad_norm_squared({on_gpu}, scratch);
  EXPECT_EQ(grad_norm_squared({on_gpu}, scratch), first);
  EXPECT_NEAR(first, grad_norm_squared({host}), 1e-12 * first);
  EXPECT_THROW(grad_norm_squared({on_gpu}, scratch.tensor().slice(0, words - 1)), Error);
}

// Written to a device word without a wait, the sum has the bits grad_norm_squared returns.
TEST(CudaGradNorm, WritesTheSameSumToADeviceWord) {
  HAI_REQUIRE_CUDA_DEVICE();
  OwnedTensor on_gpu = testing::copy_to(testing::random_tensor(Shape{100003}, 402, 1e-2f), Device::cuda(0));
  OwnedTensor scratch(Shape{grad_norm_scratch_size({on_gpu})}, DType::i64, Device::cuda(0));
  OwnedTensor total(Shape{1}, DType::i64, Device::cuda(0));
  grad_norm_squared_to(total, {on_gpu}, scratch);
  EXPECT_EQ(std::bit_cast<double>(host_copy(total).data<int64_t>()[0]), grad_norm_squared({on_gpu}, scratch));
  grad_norm_squared_to(total, {}, scratch);
  EXPECT_EQ(host_copy(total).data<int64_t>()[0], 0);
}

// 1 + 4096^2 = 2^24 + 1 is not an fp32 number, but the double sum holds it exactly; the empty list gives 0.
TEST(CudaGradNorm, SumsInDouble) {
  HAI_REQUIRE_CUDA_DEVICE();
  OwnedTensor values = testing::tensor_of(Shape{2}, {1.0f, 4096.0f});
  OwnedTensor on_gpu = testing::copy_to(values, Device::cuda(0));
  EXPECT_EQ(grad_norm_squared({on_gpu}), 16777217.0);
  EXPECT_EQ(grad_norm_squared({}), 0.0);
}

}  // namespace
}  // namespace hai
