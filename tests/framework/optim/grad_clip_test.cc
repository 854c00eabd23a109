#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "framework/device/grad_norm.h"
#include "framework/optim/grad_clip.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::tensor_of;

TEST(ClipGradients, ScalesToTheClipNormAndReturnsThePreClipNorm) {
  OwnedTensor first = tensor_of(Shape{2}, {3.0f, 0.0f});
  OwnedTensor second = tensor_of(Shape{1}, {-4.0f});
  std::vector<Tensor> grads = {first, second};
  double norm = clip_gradients(grads, grad_norm_squared(grads), 1.0);
  EXPECT_DOUBLE_EQ(norm, 5.0);
  float factor = static_cast<float>(1.0 / (5.0 + 1e-6));
  EXPECT_FLOAT_EQ(first.data<float>()[0], 3.0f * factor);
  EXPECT_EQ(first.data<float>()[1], 0.0f);
  EXPECT_FLOAT_EQ(second.data<float>()[0], -4.0f * factor);
  EXPECT_NEAR(std::sqrt(grad_norm_squared(grads)), 1.0, 1e-6);
}

TEST(ClipGradients, LeavesSmallNormsAndDisabledClippingAlone) {
  OwnedTensor grad = tensor_of(Shape{2}, {3.0f, 4.0f});
  EXPECT_DOUBLE_EQ(clip_gradients({grad}, 25.0, 10.0), 5.0);  // below the clip norm
  EXPECT_DOUBLE_EQ(clip_gradients({grad}, 25.0, 0.0), 5.0);   // 0 = no clipping
  EXPECT_EQ(grad.data<float>()[0], 3.0f);
  EXPECT_EQ(grad.data<float>()[1], 4.0f);
}

TEST(ClipGradients, UsesTheGivenReducedNorm) {
  // With data parallelism the squared norm is the sum over ranks, larger than this rank's own.
  OwnedTensor grad = tensor_of(Shape{2}, {3.0f, 4.0f});
  EXPECT_DOUBLE_EQ(clip_gradients({grad}, 100.0, 5.0), 10.0);
  EXPECT_FLOAT_EQ(grad.data<float>()[0], 3.0f * static_cast<float>(5.0 / (10.0 + 1e-6)));
}

TEST(ClipGradients, NonFiniteNormLeavesGradientsForTheCallerToSkip) {
  OwnedTensor grad = tensor_of(Shape{2}, {3.0f, std::numeric_limits<float>::infinity()});
  EXPECT_TRUE(std::isinf(clip_gradients({grad}, grad_norm_squared({grad}), 1.0)));
  EXPECT_TRUE(std::isnan(clip_gradients({grad}, std::numeric_limits<double>::quiet_NaN(), 1.0)));
  EXPECT_EQ(grad.data<float>()[0], 3.0f);
}

TEST(ClipGradients, RejectsNegativeClipNorm) {
  OwnedTensor grad = tensor_of(Shape{1}, {1.0f});
  EXPECT_THROW(clip_gradients({grad}, 1.0, -1.0), Error);
}

}  // namespace
}  // namespace hai
