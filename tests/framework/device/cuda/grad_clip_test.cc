// The update-scale kernel against the CPU op, bit for bit: it does the same IEEE operations in the same order.

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "framework/device/grad_clip.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

struct ScaleAndNorm {
  OwnedTensor scale, norm;  // [1] f32, [1] i64 on the host
};

ScaleAndNorm run_on(Device device, const Tensor& squared_norms, int64_t mean_over,
                    const GradientClipSettings& settings) {
  OwnedTensor scale(Shape{1}, DType::f32, device), norm(Shape{1}, DType::i64, device);
  OwnedTensor squared = testing::copy_to(squared_norms, device);
  gradient_update_scale(scale, norm, squared, mean_over, settings);
  return {host_copy(scale), host_copy(norm)};
}

TEST(CudaGradClip, UpdateScaleMatchesCpuBitForBit) {
  HAI_REQUIRE_CUDA_DEVICE();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::vector<double> squared_norms;
    int64_t mean_over;  // the ranks the gradients are sums over
    GradientClipSettings settings;
  };
  std::vector<Case> cases = {
      {{2.3456789}, 1, {.max_norm = 1.0}},
      {{0.123, 0.456, 7.891}, 3, {.max_norm = 1.0, .loss_scale = 65536.0}},  // 3 ranks: inexact divisions
      {{1e-3, 2e-3}, 2, {.max_norm = 1.0}},                                  // under the clip norm
      {{4.0e6, 3.5e6, 1.0, 7.0}, 4, {.max_norm = 0.0, .loss_scale = 1024.0}},
      {{0.5, 1.5, 2.5, 3.5, 4.5, 5.5}, 2, {.max_norm = 1.0, .loss_scale = 3.0}},  // pp 3 x dp 2
      {{0.25, 0.75, 1.25}, 1, {.max_norm = 0.5}},                                // pp 3, dp 1
      {{1.0, inf}, 2, {.max_norm = 1.0}},
      {{std::numeric_limits<double>::quiet_NaN()}, 1, {.max_norm = 1.0, .loss_scale = 8.0}},
  };
  for (const Case& each : cases) {
    OwnedTensor squared = testing::doubles_as_words(each.squared_norms);
    ScaleAndNorm cpu = run_on(Device::cpu(), squared, each.mean_over, each.settings);
    ScaleAndNorm gpu = run_on(Device::cuda(0), squared, each.mean_over, each.settings);
    EXPECT_TRUE(testing::same_bytes(cpu.scale, gpu.scale)) << cpu.scale.data<float>()[0] << " vs "
                                                           << gpu.scale.data<float>()[0];
    EXPECT_TRUE(testing::same_bytes(cpu.norm, gpu.norm)) << each.squared_norms.size() << " ranks";
  }
}

}  // namespace
}  // namespace hai
