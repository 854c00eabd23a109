// The multi-tensor AdamW step against adamw_step applied segment by segment (bit for bit), the gradient scale,
// the compute copy, the run table, and the operand checks.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "framework/device/cast.h"
#include "framework/device/elementwise.h"
#include "framework/device/fused_adamw.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::random_tensor;
using testing::same_bytes;

OwnedTensor copy_of(const Tensor& source) {
  OwnedTensor copy(source.shape(), source.dtype());
  copy_tensor(copy, source);
  return copy;
}

// Values [N = 30000] with gaps between the segments (like non-trainable parameters), state [M = 29000]: misaligned
// starts, a segment longer than several runs, one without weight decay, one empty.
constexpr int64_t kValues = 30000, kStates = 29000;
const std::vector<AdamWSegment> kSegments = {
    {.value_offset = 3, .state_offset = 0, .numel = 17, .weight_decay = true},
    {.value_offset = 21, .state_offset = 17, .numel = 20000, .weight_decay = true},
    {.value_offset = 20021, .state_offset = 20017, .numel = 0, .weight_decay = true},
    {.value_offset = 20030, .state_offset = 20017, .numel = 8983, .weight_decay = false},
};

struct AdamWState {
  OwnedTensor values, grads, exp_avg, exp_avg_sq;

  AdamWState(DType moment_dtype, uint64_t seed)
      : values(random_tensor(Shape{kValues}, seed)),
        grads(random_tensor(Shape{kStates}, seed + 1, 0.1f)),
        exp_avg(moments(random_tensor(Shape{kStates}, seed + 2, 0.01f), moment_dtype)),
        exp_avg_sq(moments(random_tensor(Shape{kStates}, seed + 3, 1e-4f), moment_dtype)) {}

  // |x| rounded to the moment dtype (the second moment must not be negative).
  static OwnedTensor moments(const OwnedTensor& x, DType dtype) {
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::fabs(x.data<float>()[i]);
    OwnedTensor result(x.shape(), dtype);
    cast_tensor(result, x);
    return result;
  }
};

AdamWSettings settings_of_step(int64_t step) {
  return {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .step = step};
}

// adamw_step on each segment's slices, with its weight decay.
void adamw_by_segment(const AdamWState& state, AdamWSettings settings) {
  float weight_decay = settings.weight_decay;
  for (const AdamWSegment& segment : kSegments) {
    settings.weight_decay = segment.weight_decay ? weight_decay : 0.0f;
    int64_t value = segment.value_offset, offset = segment.state_offset, end = offset + segment.numel;
    adamw_step(state.values.tensor().slice(value, value + segment.numel), state.grads.tensor().slice(offset, end),
               state.exp_avg.tensor().slice(offset, end), state.exp_avg_sq.tensor().slice(offset, end), settings);
  }
}

TEST(FusedAdamW, EqualsAdamWStepOnEverySegmentBitForBit) {
  for (DType moment_dtype : {DType::f32, DType::bf16}) {
    AdamWState fused(moment_dtype, 7), reference(moment_dtype, 7);
    AdamWSegmentTable table(kSegments, Device::cpu());
    for (int64_t step = 1; step <= 3; ++step) {
      fused_adamw_step(fused.values, Tensor(), fused.grads, fused.exp_avg, fused.exp_avg_sq, table,
                       settings_of_step(step), 1.0f);
      adamw_by_segment(reference, settings_of_step(step));
    }
    EXPECT_TRUE(same_bytes(fused.values, reference.values)) << dtype_name(moment_dtype);
    EXPECT_TRUE(same_bytes(fused.exp_avg, reference.exp_avg)) << dtype_name(moment_dtype);
    EXPECT_TRUE(same_bytes(fused.exp_avg_sq, reference.exp_avg_sq)) << dtype_name(moment_dtype);
  }
}

TEST(FusedAdamW, MultipliesTheGradientsByTheScaleWithoutWritingThem) {
  AdamWState fused(DType::f32, 11), reference(DType::f32, 11);
  OwnedTensor grads_before = copy_of(fused.grads);
  const float scale = 0.37f;
  fused_adamw_step(fused.values, Tensor(), fused.grads, fused.exp_avg, fused.exp_avg_sq,
                   AdamWSegmentTable(kSegments, Device::cpu()), settings_of_step(2), scale);
  scale_tensor(reference.grads, scale);  // g * scale, rounded once, as the fused step reads it
  adamw_by_segment(reference, settings_of_step(2));
  EXPECT_TRUE(same_bytes(fused.values, reference.values));
  EXPECT_TRUE(same_bytes(fused.exp_avg, reference.exp_avg));
  EXPECT_TRUE(same_bytes(fused.exp_avg_sq, reference.exp_avg_sq));
  EXPECT_TRUE(same_bytes(fused.grads, grads_before));
}

// A scale read from a tensor at run time (a factor made on the device) updates as the same host float does.
TEST(FusedAdamW, ReadsTheScaleFromATensorAsFromAHostFloat) {
  AdamWState from_tensor(DType::bf16, 17), from_float(DType::bf16, 17);
  OwnedTensor scale = testing::tensor_of(Shape{1}, {0.37f});
  AdamWSegmentTable table(kSegments, Device::cpu());
  fused_adamw_step(from_tensor.values, Tensor(), from_tensor.grads, from_tensor.exp_avg, from_tensor.exp_avg_sq, table,
                   settings_of_step(2), GradientScale(scale.tensor()));
  fused_adamw_step(from_float.values, Tensor(), from_float.grads, from_float.exp_avg, from_float.exp_avg_sq, table,
                   settings_of_step(2), 0.37f);
  EXPECT_TRUE(same_bytes(from_tensor.values, from_float.values));
  EXPECT_TRUE(same_bytes(from_tensor.exp_avg, from_float.exp_avg));
  EXPECT_TRUE(same_bytes(from_tensor.exp_avg_sq, from_float.exp_avg_sq));
  OwnedTensor too_long(Shape{2}, DType::f32);
  EXPECT_THROW(fused_adamw_step(from_tensor.values, Tensor(), from_tensor.grads, from_tensor.exp_avg,
                                from_tensor.exp_avg_sq, table, settings_of_step(3), GradientScale(too_long.tensor())),
               Error);
}

// A NaN scale (a step whose gradients were not finite, grad_clip.h) changes nothing: no decay, no moment, no copy.
TEST(FusedAdamW, ANanScaleSkipsTheStep) {
  AdamWState state(DType::f32, 19), untouched(DType::f32, 19);
  OwnedTensor compute(Shape{kValues}, DType::bf16), zero_bits(Shape{kValues}, DType::bf16);
  OwnedTensor nan = testing::tensor_of(Shape{1}, {std::numeric_limits<float>::quiet_NaN()});
  AdamWSegmentTable table(kSegments, Device::cpu());
  fused_adamw_step(state.values, compute, state.grads, state.exp_avg, state.exp_avg_sq, table, settings_of_step(1),
                   GradientScale(nan.tensor()));
  fused_adamw_step(state.values, compute, state.grads, state.exp_avg, state.exp_avg_sq, table, settings_of_step(1),
                   std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(same_bytes(state.values, untouched.values));
  EXPECT_TRUE(same_bytes(state.exp_avg, untouched.exp_avg));
  EXPECT_TRUE(same_bytes(state.exp_avg_sq, untouched.exp_avg_sq));
  EXPECT_TRUE(same_bytes(compute, zero_bits));
}

TEST(FusedAdamW, WritesTheComputeCopyOfTheUpdatedValuesOnly) {
  for (DType compute_dtype : {DType::bf16, DType::f16}) {
    AdamWState state(DType::bf16, 13);
    OwnedTensor compute(Shape{kValues}, compute_dtype);  // zero bits: untouched elements stay zero
    fused_adamw_step(state.values, compute, state.grads, state.exp_avg, state.exp_avg_sq,
                     AdamWSegmentTable(kSegments, Device::cpu()), settings_of_step(1), 1.0f);
    OwnedTensor rounded(Shape{kValues}, compute_dtype);
    cast_tensor(rounded, state.values);
    std::vector<bool> updated(kValues, false);
    for (const AdamWSegment& segment : kSegments) {
      for (int64_t i = 0; i < segment.numel; ++i) updated[segment.value_offset + i] = true;
    }
    const auto* bits = static_cast<const uint16_t*>(compute.tensor().raw());
    const auto* expected = static_cast<const uint16_t*>(rounded.tensor().raw());
    for (int64_t i = 0; i < kValues; ++i) {
      ASSERT_EQ(bits[i], updated[i] ? expected[i] : 0) << dtype_name(compute_dtype) << " element " << i;
    }
  }
}

TEST(FusedAdamW, ZeroGradientsOnlyDecayWhateverTheScale) {
  // Zero gradients from zero moments: m = v = 0 and p = p (1 - lr wd) exactly, whatever the scale.
  OwnedTensor values = testing::tensor_of(Shape{4}, {1.0f, -2.0f, 4.0f, 0.5f});
  OwnedTensor grads(Shape{4}, DType::f32), exp_avg(Shape{4}, DType::f32), exp_avg_sq(Shape{4}, DType::f32);
  std::vector<AdamWSegment> segments = {{.value_offset = 0, .state_offset = 0, .numel = 4, .weight_decay = true}};
  fused_adamw_step(values, Tensor(), grads, exp_avg, exp_avg_sq, AdamWSegmentTable(segments, Device::cpu()),
                   {.lr = 0.5f, .weight_decay = 0.5f, .step = 1}, 1e6f);
  EXPECT_EQ(values.data<float>()[0], 0.75f);
  EXPECT_EQ(values.data<float>()[1], -1.5f);
  EXPECT_EQ(values.data<float>()[2], 3.0f);
  EXPECT_EQ(exp_avg.data<float>()[3], 0.0f);
}

TEST(AdamWSegments, CutsSegmentsIntoAlignedRunsOfBoundedLength) {
  std::vector<AdamWSegment> segments = {{.value_offset = 3, .state_offset = 1, .numel = 20000, .weight_decay = true},
                                        {.value_offset = 40000, .state_offset = 30000, .numel = 0},
                                        {.value_offset = 50000, .state_offset = 30001, .numel = 5}};
  std::vector<AdamWSegment> runs = adamw_runs(segments);
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].value_offset, 3);
  EXPECT_EQ(runs[0].numel, kAdamWRunElements - 3);  // up to the next multiple of 4
  EXPECT_EQ(runs[1].value_offset, kAdamWRunElements);
  EXPECT_EQ(runs[1].state_offset, kAdamWRunElements - 2);
  EXPECT_EQ(runs[1].numel, kAdamWRunElements);
  EXPECT_EQ(runs[2].value_offset, 2 * kAdamWRunElements);
  EXPECT_EQ(runs[2].numel, 20000 - 2 * kAdamWRunElements + 3);
  EXPECT_TRUE(runs[2].weight_decay);
  EXPECT_EQ(runs[3].value_offset, 50000);
  EXPECT_FALSE(runs[3].weight_decay);

  AdamWSegmentTable table(segments, Device::cpu());
  EXPECT_EQ(table.run_count(), 4);
  EXPECT_EQ(table.runs().shape(), (Shape{4, 4}));
  EXPECT_EQ(table.runs().data<int64_t>()[4 * 3 + 1], 30001);  // the last run's state offset
  EXPECT_EQ(table.value_end(), 50005);
  EXPECT_EQ(table.state_end(), 30006);
  EXPECT_THROW(adamw_runs(std::vector<AdamWSegment>{{.value_offset = -1, .numel = 2}}), Error);
}

TEST(FusedAdamW, RefusesOperandsThatDoNotFit) {
  AdamWState state(DType::f32, 17);
  AdamWSegmentTable table(kSegments, Device::cpu());
  AdamWSettings settings = settings_of_step(1);
  OwnedTensor short_values(Shape{29000}, DType::f32), short_compute(Shape{10}, DType::bf16);  // runs reach 29013
  OwnedTensor f32_compute(Shape{kValues}, DType::f32), bf16_moment(Shape{kStates}, DType::bf16);
  EXPECT_THROW(fused_adamw_step(short_values, Tensor(), state.grads, state.exp_avg, state.exp_avg_sq, table,
                                settings, 1.0f),
               Error);  // the segments reach past the values
  EXPECT_THROW(fused_adamw_step(state.values, short_compute, state.grads, state.exp_avg, state.exp_avg_sq, table,
                                settings, 1.0f),
               Error);
  EXPECT_THROW(fused_adamw_step(state.values, f32_compute, state.grads, state.exp_avg, state.exp_avg_sq, table,
                                settings, 1.0f),
               Error);
  EXPECT_THROW(fused_adamw_step(state.values, Tensor(), state.grads, state.exp_avg, bf16_moment, table, settings,
                                1.0f),
               Error);
  EXPECT_THROW(fused_adamw_step(state.values, Tensor(), state.grads, state.exp_avg, state.exp_avg_sq, table,
                                {.step = 0}, 1.0f),
               Error);
}

}  // namespace
}  // namespace hai
