// AdamWFp8Batch on the CPU against the ops it fuses, applied one weight at a time: adamw_step on the weight's values
// and states (weight decay or none), then quantize_128x128 and quantize_128x128_transposed of the updated values.
// Weights lie at gaps in the values and states, with partial 128x128 tiles. (The CUDA kernel against the CPU:
// tests/framework/device/cuda/fused_adamw_fp8_test.cc.)

#include "framework/device/fused_adamw_fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "framework/core/error.h"
#include "framework/device/adamw.h"
#include "framework/device/cast.h"
#include "framework/device/fp8_quantize.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::same_bytes;

int64_t blocks(int64_t extent) { return (extent + 127) / 128; }

struct WeightPlace {
  int64_t rows, cols, value_offset, state_offset;
  bool weight_decay;
};

const std::vector<WeightPlace> kWeights = {
    {300, 260, 5, 0, true}, {129, 7, 78010, 78000, false}, {256, 384, 79050, 79903, true}};
constexpr int64_t kValues = 79050 + 256 * 384 + 11, kStates = 79903 + 256 * 384 + 3;

// A weight's four FP8 outputs.
struct Fp8Outputs {
  OwnedTensor q, scales, q_t, scales_t;

  Fp8Outputs(int64_t n, int64_t k)
      : q(Shape{n, k}, DType::e4m3),
        scales(Shape{blocks(n), blocks(k)}, DType::f32),
        q_t(Shape{k, n}, DType::e4m3),
        scales_t(Shape{blocks(k), blocks(n)}, DType::f32) {}
};

// Everything the step touches, from seeded random values.
struct Operands {
  OwnedTensor values, grads, exp_avg, exp_avg_sq;
  std::vector<Fp8Outputs> fp8;

  explicit Operands(DType moment_dtype)
      : values(testing::random_tensor(Shape{kValues}, 1)),
        grads(testing::random_tensor(Shape{kStates}, 2, 0.1f)),
        exp_avg(moments(3, 0.01f, moment_dtype)),
        exp_avg_sq(moments(4, 1e-4f, moment_dtype)) {
    for (const WeightPlace& place : kWeights) fp8.emplace_back(place.rows, place.cols);
  }

  Tensor weight(size_t i) const {
    const WeightPlace& place = kWeights[i];
    return values.tensor().slice(place.value_offset, place.value_offset + place.rows * place.cols)
        .reshape(Shape{place.rows, place.cols});
  }
  Tensor state(const Tensor& buffer, size_t i) const {
    const WeightPlace& place = kWeights[i];
    return buffer.slice(place.state_offset, place.state_offset + place.rows * place.cols);
  }

  AdamWFp8Batch batch() const {
    std::vector<AdamWFp8Weight> weights;
    for (size_t i = 0; i < kWeights.size(); ++i) {
      const Fp8Outputs& out = fp8[i];
      weights.push_back({.copy = {weight(i), out.q, out.scales, out.q_t, out.scales_t},
                         .state_offset = kWeights[i].state_offset,
                         .weight_decay = kWeights[i].weight_decay});
    }
    return AdamWFp8Batch(values, std::move(weights));
  }

 private:
  static OwnedTensor moments(uint64_t seed, float scale, DType dtype) {
    OwnedTensor fp32 = testing::random_tensor(Shape{kStates}, seed, scale);
    for (int64_t i = 0; i < kStates; ++i) fp32.data<float>()[i] = std::fabs(fp32.data<float>()[i]);
    OwnedTensor moment(Shape{kStates}, dtype);
    cast_tensor(moment, fp32);
    return moment;
  }
};

void expect_same(const Operands& fused, const Operands& reference) {
  EXPECT_TRUE(same_bytes(fused.values, reference.values));
  EXPECT_TRUE(same_bytes(fused.exp_avg, reference.exp_avg));
  EXPECT_TRUE(same_bytes(fused.exp_avg_sq, reference.exp_avg_sq));
  for (size_t i = 0; i < kWeights.size(); ++i) {
    EXPECT_TRUE(same_bytes(fused.fp8[i].q, reference.fp8[i].q)) << i;
    EXPECT_TRUE(same_bytes(fused.fp8[i].scales, reference.fp8[i].scales)) << i;
    EXPECT_TRUE(same_bytes(fused.fp8[i].q_t, reference.fp8[i].q_t)) << i;
    EXPECT_TRUE(same_bytes(fused.fp8[i].scales_t, reference.fp8[i].scales_t)) << i;
  }
}

TEST(FusedAdamWFp8, EqualsTheAdamWStepOfEachWeightThenItsQuantisation) {
  const AdamWSettings settings{.lr = 1e-3f, .beta1 = 0.8f, .beta2 = 0.95f, .weight_decay = 0.1f, .step = 7};
  for (DType moment_dtype : {DType::f32, DType::bf16}) {
    Operands fused(moment_dtype), reference(moment_dtype);
    fused.batch().step(fused.grads, fused.exp_avg, fused.exp_avg_sq, settings, 0.5f);
    OwnedTensor scaled(Shape{kStates}, DType::f32);
    for (int64_t i = 0; i < kStates; ++i) scaled.data<float>()[i] = reference.grads.data<float>()[i] * 0.5f;
    for (size_t i = 0; i < kWeights.size(); ++i) {
      AdamWSettings weight_settings = settings;
      if (!kWeights[i].weight_decay) weight_settings.weight_decay = 0.0f;
      adamw_step(reference.weight(i).reshape(Shape{reference.weight(i).numel()}), reference.state(scaled, i),
                 reference.state(reference.exp_avg, i), reference.state(reference.exp_avg_sq, i), weight_settings);
      const Fp8Outputs& out = reference.fp8[i];
      quantize_128x128(out.q, out.scales, reference.weight(i));
      quantize_128x128_transposed(out.q_t, out.scales_t, reference.weight(i));
    }
    expect_same(fused, reference);
  }
}

TEST(FusedAdamWFp8, ANanScaleLeavesValuesMomentsAndCopiesAsTheyWere) {
  Operands operands(DType::f32), before(DType::f32);
  for (Operands* after_one_step : {&operands, &before}) {
    after_one_step->batch().step(after_one_step->grads, after_one_step->exp_avg, after_one_step->exp_avg_sq,
                                 {.lr = 1e-3f, .step = 1}, 1.0f);
  }
  operands.batch().step(operands.grads, operands.exp_avg, operands.exp_avg_sq, {.lr = 1e-3f, .step = 2},
                        GradientScale(testing::tensor_of(Shape{1}, {std::numeric_limits<float>::quiet_NaN()})));
  expect_same(operands, before);
}

TEST(FusedAdamWFp8, RefusesAWeightOutsideTheValuesAndStatesBeyondTheMoments) {
  Operands operands(DType::f32);
  OwnedTensor elsewhere = testing::random_tensor(Shape{300, 260}, 9);
  const Fp8Outputs& out = operands.fp8[0];
  EXPECT_THROW(AdamWFp8Batch(operands.values, {{.copy = {elsewhere, out.q, out.scales, out.q_t, out.scales_t}}}),
               Error);
  AdamWFp8Batch batch = operands.batch();
  Tensor short_grads = operands.grads.tensor().slice(0, kStates - 4);
  EXPECT_THROW(batch.step(short_grads, operands.exp_avg.tensor().slice(0, kStates - 4),
                          operands.exp_avg_sq.tensor().slice(0, kStates - 4), {.lr = 1e-3f, .step = 1}, 1.0f),
               Error);
}

}  // namespace
}  // namespace hai
