#include <gtest/gtest.h>

#include <limits>

#include "framework/core/error.h"
#include "framework/optim/grad_clip.h"

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

}  // namespace
}  // namespace hai
