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

// The squared norms of gradients summed over mean_over ranks (0: one entry per rank).
UpdateScale update_scale_of(const std::vector<double>& squared_norms, const GradientClipSettings& settings,
                            int64_t mean_over = 0) {
  OwnedTensor scale(Shape{1}, DType::f32), norm(Shape{1}, DType::i64);
  if (mean_over == 0) mean_over = static_cast<int64_t>(squared_norms.size());
  gradient_update_scale(scale, norm, testing::doubles_as_words(squared_norms), mean_over, settings);
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

// Three pipeline stages of two dp ranks: six entries, each a sum over the 2 dp ranks. The mean divides by 2, not
// by the entry count, exactly (no loss-scale compensation, which was exact only for a power-of-two pp).
TEST(GradientUpdateScale, TheMeanIsOverTheRanksTheSumsAreOverNotTheEntries) {
  UpdateScale stages = update_scale_of({100.0, 60.0, 36.0, 100.0, 4.0, 100.0}, {.max_norm = 0.0}, 2);
  EXPECT_EQ(stages.norm, 10.0);  // sqrt(400 / 4)
  EXPECT_EQ(stages.scale, 0.5f);
  UpdateScale one_rank = update_scale_of({9.0, 16.0, 0.0}, {.max_norm = 0.0, .loss_scale = 3.0}, 1);
  EXPECT_EQ(one_rank.norm, 5.0 / 3.0);
  EXPECT_EQ(one_rank.scale, static_cast<float>(1.0 / 3.0));
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
  EXPECT_THROW(gradient_update_scale(scale, norm, squared, 1, {.max_norm = -1.0}), Error);
  EXPECT_THROW(gradient_update_scale(scale, norm, squared, 1, {.loss_scale = 0.0}), Error);
  EXPECT_THROW(gradient_update_scale(scale, f32_norm, squared, 1, {}), Error);
  EXPECT_THROW(gradient_update_scale(scale, norm, none, 1, {}), Error);
  EXPECT_THROW(gradient_update_scale(scale, norm, squared, 0, {}), Error);
}

}  // namespace
}  // namespace hai
