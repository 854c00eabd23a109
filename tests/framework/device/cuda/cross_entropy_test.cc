#include <gtest/gtest.h>

#include "framework/device/cross_entropy.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

constexpr int64_t kTokens = 37;
constexpr int64_t kClasses = 32771;  // a large vocabulary, not a multiple of the block
constexpr float kScale = 1.0f / 30;

// Targets uniform over the classes, every fifth ignored.
OwnedTensor targets_with_ignored() {
  OwnedTensor targets = testing::random_indices(kTokens, kClasses, 2);
  for (int64_t t = 0; t < kTokens; t += 5) targets.data<int32_t>()[t] = kIgnoreTarget;
  return targets;
}

// The CPU sums exponentials in double, the GPU in fp32 (online softmax): ~1e-6 relative on a loss of ~12 nats.
TEST(CudaCrossEntropy, ForwardMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  ParityCase forward;
  forward.output(OwnedTensor(Shape{kTokens}, DType::f32), Tolerance{.atol = 1e-5, .rtol = 1e-5});
  forward.input(testing::random_tensor(Shape{kTokens, kClasses}, 1, 3.0f));
  forward.input(targets_with_ignored());
  forward.run([](const std::vector<Tensor>& t) { cross_entropy_forward(t[0], t[1], t[2]); }, "cross_entropy_forward");
}

// Probabilities of ~1e-4 with ~1e-6 relative error, times kScale.
TEST(CudaCrossEntropy, BackwardMatchesCpuAlsoInPlace) {
  HAI_REQUIRE_CUDA_DEVICE();
  constexpr Tolerance kBackward{.atol = 1e-9, .rtol = 1e-5};
  ParityCase backward;
  backward.output(OwnedTensor(Shape{kTokens, kClasses}, DType::f32), kBackward);
  backward.input(testing::random_tensor(Shape{kTokens, kClasses}, 1, 3.0f));
  backward.input(targets_with_ignored());
  backward.run([](const std::vector<Tensor>& t) { cross_entropy_backward(t[0], t[1], t[2], kScale); },
               "cross_entropy_backward");

  ParityCase in_place;
  in_place.output(testing::random_tensor(Shape{kTokens, kClasses}, 1, 3.0f), kBackward);
  in_place.input(targets_with_ignored());
  in_place.run([](const std::vector<Tensor>& t) { cross_entropy_backward(t[0], t[0], t[1], kScale); },
               "cross_entropy_backward_in_place");
}

// The fused op: losses as the forward, gradients as the backward (bf16 rounded once, and fp32 in place).
TEST(CudaCrossEntropy, LossAndGradMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  constexpr Tolerance kLoss{.atol = 1e-5, .rtol = 1e-5};
  ParityCase narrow;
  narrow.output(OwnedTensor(Shape{kTokens}, DType::f32), kLoss);
  narrow.output(OwnedTensor(Shape{kTokens, kClasses}, DType::bf16), Tolerance{.atol = 1e-9, .rtol = 8e-3});
  narrow.input(testing::random_tensor(Shape{kTokens, kClasses}, 1, 3.0f));
  narrow.input(targets_with_ignored());
  narrow.run([](const std::vector<Tensor>& t) { cross_entropy_loss_and_grad(t[0], t[1], t[2], t[3], kScale); },
             "cross_entropy_loss_and_grad_bf16");

  ParityCase in_place;
  in_place.output(OwnedTensor(Shape{kTokens}, DType::f32), kLoss);
  in_place.output(testing::random_tensor(Shape{kTokens, kClasses}, 1, 3.0f), Tolerance{.atol = 1e-9, .rtol = 1e-5});
  in_place.input(targets_with_ignored());
  in_place.run([](const std::vector<Tensor>& t) { cross_entropy_loss_and_grad(t[0], t[1], t[1], t[2], kScale); },
               "cross_entropy_loss_and_grad_in_place");
}

}  // namespace
}  // namespace hai
