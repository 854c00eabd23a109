#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "framework/device/cross_entropy.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

constexpr int64_t kTokens = 37;
constexpr float kScale = 1.0f / 30;

// Vocabularies for each path of the kernels: rows held in registers (up to 32768 classes) whose starts are all
// 16-byte aligned (32768), start anywhere (32765: every row has unaligned edges) or are short (257), and rows
// streamed from memory (32771).
constexpr int64_t kClassCounts[] = {32768, 32765, 257, 32771};

// Targets uniform over the classes but for rows 1 to 3 and 6 to 8, the first and last three classes (edges of the
// unaligned rows); every fifth ignored.
OwnedTensor targets_with_ignored(int64_t classes) {
  OwnedTensor targets = testing::random_indices(kTokens, classes, 2);
  int32_t* target = targets.data<int32_t>();
  auto last = static_cast<int32_t>(classes - 1);
  for (int32_t i = 0; i < 3; ++i) target[1 + i] = i, target[6 + i] = last - i;
  for (int64_t t = 0; t < kTokens; t += 5) target[t] = kIgnoreTarget;
  return targets;
}

OwnedTensor logits_of(int64_t classes) { return testing::random_tensor(Shape{kTokens, classes}, 1, 3.0f); }

// The CPU sums exponentials in double, the GPU in fp32: ~1e-6 relative on a loss of ~12 nats.
constexpr Tolerance kLoss{.atol = 1e-5, .rtol = 1e-5};
// Probabilities of ~1e-4 with ~1e-6 relative error, times kScale.
constexpr Tolerance kGradient{.atol = 1e-9, .rtol = 1e-5};
constexpr Tolerance kBf16Gradient{.atol = 1e-9, .rtol = 8e-3};

TEST(CudaCrossEntropy, ForwardMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t classes : kClassCounts) {
    ParityCase forward;
    forward.output(OwnedTensor(Shape{kTokens}, DType::f32), kLoss);
    forward.input(logits_of(classes));
    forward.input(targets_with_ignored(classes));
    forward.run([](const std::vector<Tensor>& t) { cross_entropy_forward(t[0], t[1], t[2]); },
                "cross_entropy_forward_" + std::to_string(classes));
  }
}

TEST(CudaCrossEntropy, BackwardMatchesCpuAlsoInPlace) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t classes : kClassCounts) {
    std::string name = "cross_entropy_backward_" + std::to_string(classes);
    ParityCase backward;
    backward.output(OwnedTensor(Shape{kTokens, classes}, DType::f32), kGradient);
    backward.input(logits_of(classes));
    backward.input(targets_with_ignored(classes));
    backward.run([](const std::vector<Tensor>& t) { cross_entropy_backward(t[0], t[1], t[2], kScale); }, name);

    ParityCase in_place;
    in_place.output(logits_of(classes), kGradient);
    in_place.input(targets_with_ignored(classes));
    in_place.run([](const std::vector<Tensor>& t) { cross_entropy_backward(t[0], t[0], t[1], kScale); },
                 name + "_in_place");
  }
}

// The fused op: losses as the forward, gradients as the backward (bf16 rounded once, and fp32 in place).
TEST(CudaCrossEntropy, LossAndGradMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t classes : kClassCounts) {
    std::string name = "cross_entropy_loss_and_grad_" + std::to_string(classes);
    ParityCase narrow;
    narrow.output(OwnedTensor(Shape{kTokens}, DType::f32), kLoss);
    narrow.output(OwnedTensor(Shape{kTokens, classes}, DType::bf16), kBf16Gradient);
    narrow.input(logits_of(classes));
    narrow.input(targets_with_ignored(classes));
    narrow.run([](const std::vector<Tensor>& t) { cross_entropy_loss_and_grad(t[0], t[1], t[2], t[3], kScale); },
               name + "_bf16");

    ParityCase in_place;
    in_place.output(OwnedTensor(Shape{kTokens}, DType::f32), kLoss);
    in_place.output(logits_of(classes), kGradient);
    in_place.input(targets_with_ignored(classes));
    in_place.run([](const std::vector<Tensor>& t) { cross_entropy_loss_and_grad(t[0], t[1], t[1], t[2], kScale); },
                 name + "_in_place");
  }
}

// [kTokens, classes] viewed `offset` elements into a flat buffer of kTokens * classes + 1.
Tensor shifted(const Tensor& flat, int64_t classes, int64_t offset) {
  return flat.slice(offset, offset + kTokens * classes).reshape(Shape{kTokens, classes});
}

// Logits one float past a 16-byte boundary, so that no row starts on one: the kernels peel each row's edges. The
// bf16 gradient either shifted alike (its rows' bodies take 8-byte stores) or not (they take 2-byte stores).
TEST(CudaCrossEntropy, UnalignedViewsMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t classes : {int64_t{32768}, int64_t{32771}}) {
    Shape flat{kTokens * classes + 1};
    for (int64_t gradient_offset : {0, 1}) {
      ParityCase narrow;
      narrow.output(OwnedTensor(Shape{kTokens}, DType::f32), kLoss);
      narrow.output(OwnedTensor(flat, DType::bf16), kBf16Gradient);
      narrow.input(testing::random_tensor(flat, 1, 3.0f));
      narrow.input(targets_with_ignored(classes));
      narrow.run(
          [&](const std::vector<Tensor>& t) {
            cross_entropy_loss_and_grad(t[0], shifted(t[1], classes, gradient_offset), shifted(t[2], classes, 1),
                                        t[3], kScale);
          },
          "cross_entropy_unaligned_" + std::to_string(classes) + "_bf16_at_" + std::to_string(gradient_offset));
    }
    ParityCase in_place;
    in_place.output(OwnedTensor(Shape{kTokens}, DType::f32), kLoss);
    in_place.output(testing::random_tensor(flat, 1, 3.0f), kGradient);
    in_place.input(targets_with_ignored(classes));
    in_place.run(
        [&](const std::vector<Tensor>& t) {
          Tensor logits = shifted(t[1], classes, 1);
          cross_entropy_loss_and_grad(t[0], logits, logits, t[2], kScale);
        },
        "cross_entropy_unaligned_" + std::to_string(classes) + "_in_place");
  }
}

// The forward and the fused op share one reduction a row: the same loss bits, from either gradient dtype, and the
// same bits on every run.
TEST(CudaCrossEntropy, ForwardLossesAreTheFusedLossesBitForBit) {
  HAI_REQUIRE_CUDA_DEVICE();
  Device gpu = Device::cuda(0);
  for (int64_t classes : kClassCounts) {
    SCOPED_TRACE(classes);
    OwnedTensor logits = testing::copy_to(logits_of(classes), gpu);
    OwnedTensor targets = testing::copy_to(targets_with_ignored(classes), gpu);
    OwnedTensor forward_losses(Shape{kTokens}, DType::f32, gpu), fused_losses(Shape{kTokens}, DType::f32, gpu);
    OwnedTensor in_place_losses(Shape{kTokens}, DType::f32, gpu);
    OwnedTensor d_logits(logits.shape(), DType::bf16, gpu), again(logits.shape(), DType::bf16, gpu);
    cross_entropy_forward(forward_losses, logits, targets);
    cross_entropy_loss_and_grad(fused_losses, d_logits, logits, targets, kScale);
    cross_entropy_loss_and_grad(fused_losses, again, logits, targets, kScale);
    cross_entropy_loss_and_grad(in_place_losses, logits, logits, targets, kScale);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    OwnedTensor expected = testing::copy_to(forward_losses, Device::cpu());
    EXPECT_TRUE(testing::same_bytes(testing::copy_to(fused_losses, Device::cpu()), expected));
    EXPECT_TRUE(testing::same_bytes(testing::copy_to(in_place_losses, Device::cpu()), expected));
    EXPECT_TRUE(testing::same_bytes(testing::copy_to(d_logits, Device::cpu()), testing::copy_to(again, Device::cpu())));
  }
}

}  // namespace
}  // namespace hai
