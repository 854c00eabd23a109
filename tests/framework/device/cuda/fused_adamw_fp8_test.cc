// The fused AdamW + FP8 weight quantisation kernel against the CPU op, bit for bit: values, both moments and the
// weights' two FP8 copies with their scales. Weights with partial 128x128 tiles at gaps in the values and states,
// fp32 and bf16 moments, weight decay on some, a host scale, and a device scale finite or NaN (nothing changes).

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "framework/device/fused_adamw_fp8.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

constexpr Tolerance kExact{};

int64_t blocks(int64_t extent) { return (extent + 127) / 128; }

struct WeightPlace {
  int64_t rows, cols, value_offset, state_offset;
  bool weight_decay;
};

const std::vector<WeightPlace> kWeights = {{300, 260, 5, 0, true},
                                           {129, 7, 78010, 78000, false},
                                           {256, 384, 79050, 79903, true},
                                           {1, 1, 177400, 178300, true}};
constexpr int64_t kValues = 177401, kStates = 178301;

OwnedTensor positive(OwnedTensor values) {
  for (int64_t i = 0; i < values.numel(); ++i) values.data<float>()[i] = std::fabs(values.data<float>()[i]);
  return values;
}

// Operands: 0 values, 1 grads, 2 exp_avg, 3 exp_avg_sq, 4 the scale, then q, scales, q_t, scales_t of each weight.
void check_fused_step(DType moment_dtype, const GradientScale& host_scale, float device_scale, bool on_device,
                      const AdamWSettings& settings, const std::string& name) {
  ParityCase step;
  step.output(testing::random_tensor(Shape{kValues}, 1), kExact);
  step.input(testing::random_tensor(Shape{kStates}, 2, 0.1f));
  step.output(testing::converted(testing::random_tensor(Shape{kStates}, 3, 0.01f), moment_dtype), kExact);
  step.output(testing::converted(positive(testing::random_tensor(Shape{kStates}, 4, 1e-4f)), moment_dtype), kExact);
  step.input(testing::tensor_of(Shape{1}, {device_scale}));
  for (const WeightPlace& place : kWeights) {
    step.output(zero_tensor(Shape{place.rows, place.cols}, DType::e4m3), kExact);
    step.output(zero_tensor(Shape{blocks(place.rows), blocks(place.cols)}, DType::f32), kExact);
    step.output(zero_tensor(Shape{place.cols, place.rows}, DType::e4m3), kExact);
    step.output(zero_tensor(Shape{blocks(place.cols), blocks(place.rows)}, DType::f32), kExact);
  }
  step.run(
      [&](const std::vector<Tensor>& t) {
        std::vector<AdamWFp8Weight> weights;
        for (size_t i = 0; i < kWeights.size(); ++i) {
          const WeightPlace& place = kWeights[i];
          Tensor x = t[0].slice(place.value_offset, place.value_offset + place.rows * place.cols)
                         .reshape(Shape{place.rows, place.cols});
          size_t first = 5 + 4 * i;
          weights.push_back({.copy = {x, t[first], t[first + 1], t[first + 2], t[first + 3]},
                             .state_offset = place.state_offset,
                             .weight_decay = place.weight_decay});
        }
        AdamWFp8Batch batch(t[0], std::move(weights));
        batch.step(t[1], t[2], t[3], settings, on_device ? GradientScale(t[4]) : host_scale);
      },
      name);
}

TEST(CudaFusedAdamWFp8, MatchesCpuBitForBit) {
  HAI_REQUIRE_CUDA_DEVICE();
  const AdamWSettings settings{.lr = 1e-3f, .beta1 = 0.8f, .beta2 = 0.95f, .eps = 1e-6f, .weight_decay = 0.1f,
                               .step = 7};
  for (DType moment_dtype : {DType::f32, DType::bf16}) {
    std::string moments(dtype_name(moment_dtype));
    check_fused_step(moment_dtype, 0.3f / 1024.0f, 0.0f, false, settings, "fused_adamw_fp8_" + moments);
    check_fused_step(moment_dtype, 1.0f, 0.5f, true, settings, "fused_adamw_fp8_device_scale_" + moments);
  }
}

TEST(CudaFusedAdamWFp8, ANanDeviceScaleLeavesEverythingOnBoth) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_fused_step(DType::f32, 1.0f, std::numeric_limits<float>::quiet_NaN(), true, {.lr = 1e-3f, .step = 3},
                   "fused_adamw_fp8_nan_scale");
}

}  // namespace
}  // namespace hai
