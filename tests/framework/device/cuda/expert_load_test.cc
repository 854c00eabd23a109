#include <gtest/gtest.h>

#include <limits>
#include <utility>

#include "framework/device/expert_load.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;

constexpr int64_t kExperts = 13;

// Integer counts are exact whatever the order of the atomic adds.
TEST(CudaExpertLoad, AccumulatesCountsExactly) {
  HAI_REQUIRE_CUDA_DEVICE();
  ParityCase load;
  load.output(testing::random_indices(kExperts, 100, 1), {});  // counts of earlier micro-batches
  OwnedTensor topk = testing::random_indices(1000, kExperts, 2);
  load.input(testing::copy_to(topk.tensor().reshape(Shape{250, 4}), Device::cpu()));
  load.run([](const std::vector<Tensor>& t) { accumulate_expert_load(t[0], t[1]); }, "accumulate_expert_load");
}

// Loads 0..12 have mean 6: expert 6 keeps its bias, the others move by exactly +-gamma.
TEST(CudaExpertLoad, BiasUpdateIsExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  OwnedTensor loads(Shape{kExperts}, DType::i32);
  for (int64_t e = 0; e < kExperts; ++e) loads.data<int32_t>()[e] = static_cast<int32_t>(e);
  ParityCase bias;
  bias.output(testing::random_tensor(Shape{kExperts}, 3), {});
  bias.input(std::move(loads));
  bias.run([](const std::vector<Tensor>& t) { update_router_bias(t[0], t[1], 1e-3f); }, "update_router_bias");
}

// Gated by the optimizer's update scale on the device: NaN keeps every bias on both, a finite one moves them.
TEST(CudaExpertLoad, BiasUpdateReadsTheUpdateScale) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (float scale : {std::numeric_limits<float>::quiet_NaN(), 0.25f}) {
    OwnedTensor loads(Shape{kExperts}, DType::i32);
    for (int64_t e = 0; e < kExperts; ++e) loads.data<int32_t>()[e] = static_cast<int32_t>(kExperts - e);
    ParityCase bias;
    bias.output(testing::random_tensor(Shape{kExperts}, 4), {});
    bias.input(std::move(loads));
    bias.input(testing::tensor_of(Shape{1}, {scale}));
    bias.run([](const std::vector<Tensor>& t) { update_router_bias(t[0], t[1], 1e-3f, t[2]); }, "update_router_bias");
  }
}

}  // namespace
}  // namespace hai
