#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "framework/device/cross_entropy.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// -log_softmax(row)[target] in double
double reference_loss(const float* row, int64_t classes, int32_t target) {
  double maximum = row[0];
  for (int64_t v = 1; v < classes; ++v) maximum = std::max(maximum, static_cast<double>(row[v]));
  double sum = 0;
  for (int64_t v = 0; v < classes; ++v) sum += std::exp(row[v] - maximum);
  return std::log(sum) + maximum - row[target];
}

TEST(CrossEntropy, ForwardKnownValues) {
  OwnedTensor logits = testing::tensor_of(Shape{3, 4}, {0, 0, 0, 0, 1, 2, 3, 4, 1000, 1001, 1002, 0});
  OwnedTensor targets = testing::indices_of({2, 0, 2});
  OwnedTensor losses(Shape{3}, DType::f32);
  cross_entropy_forward(losses, logits, targets);
  EXPECT_FLOAT_EQ(losses.data<float>()[0], std::log(4.0f));
  double e = std::exp(1.0);
  EXPECT_FLOAT_EQ(losses.data<float>()[1], static_cast<float>(std::log(e + e * e + e * e * e + e * e * e * e) - 1));
  // Large logits stay finite: log(e^-2 + e^-1 + 1 + ~0).
  EXPECT_FLOAT_EQ(losses.data<float>()[2], static_cast<float>(std::log(std::exp(-2.0) + std::exp(-1.0) + 1.0)));
}

TEST(CrossEntropy, ForwardMatchesDoubleLogSoftmax) {
  Shape shape{5, 11};
  OwnedTensor logits = testing::random_tensor(shape, 1, 4.0f);
  OwnedTensor targets = testing::indices_of({10, 0, 3, 3, 7});
  OwnedTensor losses(Shape{5}, DType::f32);
  cross_entropy_forward(losses, logits, targets);
  for (int64_t t = 0; t < 5; ++t) {
    double expected = reference_loss(logits.data<float>() + t * 11, 11, targets.data<int32_t>()[t]);
    EXPECT_NEAR(losses.data<float>()[t], expected, 1e-5) << "token " << t;
  }
}

TEST(CrossEntropy, IgnoredTargetsGiveZeroLossAndGradient) {
  OwnedTensor logits = testing::random_tensor(Shape{3, 5}, 2);
  OwnedTensor targets = testing::indices_of({-1, 4, -1});
  OwnedTensor losses(Shape{3}, DType::f32), d_logits(Shape{3, 5}, DType::f32);
  cross_entropy_forward(losses, logits, targets);
  cross_entropy_backward(d_logits, logits, targets, 1.0f);
  EXPECT_EQ(losses.data<float>()[0], 0.0f);
  EXPECT_EQ(losses.data<float>()[2], 0.0f);
  EXPECT_GT(losses.data<float>()[1], 0.0f);
  for (int64_t v = 0; v < 5; ++v) {
    EXPECT_EQ(d_logits.data<float>()[v], 0.0f);
    EXPECT_EQ(d_logits.data<float>()[10 + v], 0.0f);
  }
}

TEST(CrossEntropy, BackwardKnownValues) {
  // Uniform logits over 4 classes: softmax 1/4 everywhere, target 1; scale 2.
  OwnedTensor logits = testing::tensor_of(Shape{1, 4}, {3, 3, 3, 3});
  OwnedTensor d_logits(Shape{1, 4}, DType::f32);
  cross_entropy_backward(d_logits, logits, testing::indices_of({1}), 2.0f);
  EXPECT_FLOAT_EQ(d_logits.data<float>()[0], 0.5f);
  EXPECT_FLOAT_EQ(d_logits.data<float>()[1], -1.5f);
  EXPECT_FLOAT_EQ(d_logits.data<float>()[2], 0.5f);
  EXPECT_FLOAT_EQ(d_logits.data<float>()[3], 0.5f);
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferences) {
  Shape shape{4, 13};
  float scale = 0.25f;
  OwnedTensor logits = testing::random_tensor(shape, 3, 2.0f);
  OwnedTensor targets = testing::indices_of({12, -1, 0, 5});
  OwnedTensor losses(Shape{4}, DType::f32), d_logits(shape, DType::f32);
  cross_entropy_backward(d_logits, logits, targets, scale);
  auto loss = [&] {
    cross_entropy_forward(losses, logits, targets);
    double sum = 0;
    for (int64_t t = 0; t < 4; ++t) sum += losses.data<float>()[t];
    return scale * sum;
  };
  testing::check_gradient(logits, d_logits, loss, 1e-2, 1e-4, 1e-2);
}

TEST(CrossEntropy, BackwardInPlaceMatchesOutOfPlace) {
  Shape shape{3, 7};
  OwnedTensor logits = testing::random_tensor(shape, 4);
  OwnedTensor targets = testing::indices_of({6, 0, -1});
  OwnedTensor d_logits(shape, DType::f32);
  cross_entropy_backward(d_logits, logits, targets, 0.5f);
  cross_entropy_backward(logits, logits, targets, 0.5f);
  for (int64_t i = 0; i < logits.numel(); ++i) EXPECT_EQ(logits.data<float>()[i], d_logits.data<float>()[i]);
}

// The fused op gives the two ops' bits: losses, fp32 gradients (also in place) and bf16 gradients rounded once.
TEST(CrossEntropy, LossAndGradMatchTheSeparateOps) {
  Shape shape{5, 300};
  OwnedTensor logits = testing::random_tensor(shape, 5, 3.0f);
  OwnedTensor targets = testing::indices_of({299, -1, 0, 17, 150});
  OwnedTensor losses(Shape{5}, DType::f32), d_logits(shape, DType::f32);
  cross_entropy_forward(losses, logits, targets);
  cross_entropy_backward(d_logits, logits, targets, 0.125f);
  OwnedTensor fused_losses(Shape{5}, DType::f32), narrow(shape, DType::bf16);
  cross_entropy_loss_and_grad(fused_losses, narrow, logits, targets, 0.125f);
  for (int64_t t = 0; t < 5; ++t) EXPECT_EQ(fused_losses.data<float>()[t], losses.data<float>()[t]) << t;
  for (int64_t i = 0; i < d_logits.numel(); ++i) {
    ASSERT_EQ(narrow.data<bf16>()[i].bits, float_to_bf16(d_logits.data<float>()[i])) << "element " << i;
  }
  cross_entropy_loss_and_grad(fused_losses, logits, logits, targets, 0.125f);  // in place, fp32
  for (int64_t t = 0; t < 5; ++t) EXPECT_EQ(fused_losses.data<float>()[t], losses.data<float>()[t]) << t;
  for (int64_t i = 0; i < d_logits.numel(); ++i) ASSERT_EQ(logits.data<float>()[i], d_logits.data<float>()[i]) << i;
  OwnedTensor f16_gradient(shape, DType::f16);
  EXPECT_THROW(cross_entropy_loss_and_grad(fused_losses, f16_gradient, logits, targets, 1.0f), Error);
}

TEST(CrossEntropy, SingleClassHasZeroLoss) {
  OwnedTensor logits = testing::tensor_of(Shape{1, 1}, {5}), losses(Shape{1}, DType::f32);
  cross_entropy_forward(losses, logits, testing::indices_of({0}));
  EXPECT_EQ(losses.data<float>()[0], 0.0f);
}

TEST(CrossEntropy, RejectsBadTargets) {
  OwnedTensor logits(Shape{2, 3}, DType::f32), losses(Shape{2}, DType::f32);
  EXPECT_THROW(cross_entropy_forward(losses, logits, testing::indices_of({0, 3})), Error);
  EXPECT_THROW(cross_entropy_forward(losses, logits, testing::indices_of({0, -2})), Error);
  EXPECT_THROW(cross_entropy_forward(losses, logits, testing::indices_of({0, 1}), 1), Error);  // ignore is a class
}

}  // namespace
}  // namespace hai
