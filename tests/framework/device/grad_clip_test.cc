#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "framework/core/error.h"
#include "framework/device/grad_clip.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

TEST(ClipFactor, ScalesTheNormDownToTheClipNorm) {
  EXPECT_DOUBLE_EQ(clip_factor(5.0, 1.0), 1.0 / (5.0 + 1e-6));
  // With data parallelism the norm is the global one, larger than this rank's own.
  EXPECT_DOUBLE_EQ(clip_factor(10.0, 5.0), 5.0 / (10.0 + 1e-6));
}

TEST(ClipFactor, LeavesSmallNormsAndDisabledClippingAlone) {
  EXPECT_EQ(clip_factor(5.0, 10.0), 1.0);  // below the clip norm
  EXPECT_EQ(clip_factor(5.0, 0.0), 1.0);   // 0 = no clipping
  EXPECT_EQ(clip_factor(0.0, 1.0), 1.0);
}

TEST(ClipFactor, NonFiniteNormIsLeftForTheCallerToSkip) {
  EXPECT_EQ(clip_factor(std::numeric_limits<double>::infinity(), 1.0), 1.0);
  EXPECT_EQ(clip_factor(std::numeric_limits<double>::quiet_NaN(), 1.0), 1.0);
}

TEST(ClipFactor, RejectsNegativeClipNorm) { EXPECT_THROW(clip_factor(1.0, -1.0), Error); }

struct UpdateScale {
  double norm = 0.0;
  float scale = 0.0f;
};

UpdateScale update_scale_of(const std::vector<double>& squared_norms, const GradientClipSettings& settings) {
  OwnedTensor scale(Shape{1}, DType::f32), norm(Shape{1}, DType::i64);
  gradient_update_scale(scale, norm, testing::doubles_as_words(squared_norms), settings);
  return {std::bit_cast<double>(norm.data<int64_t>()[0]), scale.data<float>()[0]};
}

// Two ranks hold shards of gradients summed over both and scaled by 4: squared norms 576 + 1024 of the sums are
// 400 for the mean, whose norm 20 is 5 unscaled. The factor clips 5 to 1, removes the loss scale and the sum.
TEST(GradientUpdateScale, ClipsTheUnscaledMeanAndFoldsInTheLossScaleAndTheRanks) {
  UpdateScale clipped = update_scale_of({576.0, 1024.0}, {.max_norm = 1.0, .loss_scale = 4.0});
  EXPECT_EQ(clipped.norm, 5.0);
  EXPECT_EQ(clipped.scale, static_cast<float>(clip_factor(5.0, 1.0) / 4.0) / 2.0f);
  UpdateScale unclipped = update_scale_of({576.0, 1024.0}, {.max_norm = 0.0, .loss_scale = 4.0});
  EXPECT_EQ(unclipped.norm, 5.0);
  EXPECT_EQ(unclipped.scale, 0.125f);
  EXPECT_EQ(update_scale_of({9.0}, {.max_norm = 10.0}).scale, 1.0f);  // under the clip norm: the plain gradient
}

// An inf or NaN on any rank makes the norm non-finite and the scale NaN: every consumer skips the step.
TEST(GradientUpdateScale, ANonFiniteNormGivesANanScale) {
  for (double bad : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    UpdateScale skipped = update_scale_of({1.0, bad, 4.0}, {.max_norm = 1.0});
    EXPECT_FALSE(std::isfinite(skipped.norm));
    EXPECT_TRUE(std::isnan(skipped.scale));
  }
}

TEST(GradientUpdateScale, RejectsBadSettingsAndOperands) {
  OwnedTensor scale(Shape{1}, DType::f32), norm(Shape{1}, DType::i64), f32_norm(Shape{1}, DType::f32);
  OwnedTensor squared = testing::doubles_as_words({1.0}), none(Shape{0}, DType::i64);
  EXPECT_THROW(gradient_update_scale(scale, norm, squared, {.max_norm = -1.0}), Error);
  EXPECT_THROW(gradient_update_scale(scale, norm, squared, {.loss_scale = 0.0}), Error);
  EXPECT_THROW(gradient_update_scale(scale, f32_norm, squared, {}), Error);
  EXPECT_THROW(gradient_update_scale(scale, norm, none, {}), Error);
}

}  // namespace
}  // namespace hai
