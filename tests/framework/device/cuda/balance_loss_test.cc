#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "framework/device/balance_loss.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/cuda/routing_inputs.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::RoutingCase;
using testing::Tolerance;

// Expert fractions are integer counts times one rounded factor: exact.
constexpr Tolerance kExact{};
// The loss sums L per-token ratios of O(1): the CPU adds them serially (error up to ~L * 2^-24 relative), the GPU
// in a tree.
constexpr Tolerance kLoss{.atol = 0.0, .rtol = 1e-4};
// With alpha = L the gradients are O(1e-2); the per-token sums over E differ in rounding (~1e-6 of the O(1) mean
// fraction that each f_j is compared with), which reaches d_logits as ~1e-8 absolute.
constexpr Tolerance kGradient{.atol = 1e-7, .rtol = 1e-4};

std::string name_of(const char* op, const RoutingCase& c, int64_t sequences) {
  return std::string(op) + "_N" + std::to_string(sequences) + "_T" + std::to_string(c.tokens) + "_E" +
         std::to_string(c.experts) + "_K" + std::to_string(c.experts_per_token);
}

void check_balance_loss(const RoutingCase& c, int64_t sequences, uint64_t seed) {
  testing::RoutedTokens routed = testing::route_on_cpu(c, testing::router_inputs(c, seed));
  float alpha = static_cast<float>(c.tokens / sequences);
  ParityCase forward;
  forward.output(OwnedTensor(Shape{sequences}, DType::f32), kLoss);
  forward.output(OwnedTensor(Shape{sequences, c.experts}, DType::f32), kExact);
  forward.input(testing::copy_to(routed.scores, Device::cpu()));
  forward.input(testing::copy_to(routed.topk_indices, Device::cpu()));
  forward.run([&](const std::vector<Tensor>& t) { balance_loss_forward(t[0], t[1], t[2], t[3], alpha); },
              name_of("balance_loss_forward", c, sequences));

  OwnedTensor loss(Shape{sequences}, DType::f32), fraction(Shape{sequences, c.experts}, DType::f32);
  balance_loss_forward(loss, fraction, routed.scores, routed.topk_indices, alpha);
  for (bool accumulate : {false, true}) {
    ParityCase backward;
    backward.output(accumulate ? testing::random_tensor(Shape{c.tokens, c.experts}, seed + 2, 0.01f)
                               : OwnedTensor(Shape{c.tokens, c.experts}, DType::f32),
                    kGradient);  // d_logits, added to
    backward.input(testing::random_tensor(Shape{sequences}, seed + 3));  // d_loss
    backward.input(testing::copy_to(fraction, Device::cpu()));
    backward.input(testing::copy_to(routed.scores, Device::cpu()));
    backward.run([&](const std::vector<Tensor>& t) { balance_loss_backward(t[0], t[1], t[2], t[3], alpha); },
                 name_of(accumulate ? "balance_loss_backward_accumulating" : "balance_loss_backward", c, sequences));
  }
}

// bench_moe_1p7b: a micro-batch of 4 sequences of 2048 tokens, 32 experts, 4 per token.
TEST(CudaBalanceLoss, BenchModelShapeMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_balance_loss({.tokens = 8192, .experts = 32, .experts_per_token = 4,
                      .options = {.groups = 4, .groups_per_token = 2, .routed_scaling_factor = 1.0f}},
                     4, 101);
}

// DeepSeek-V3: 256 experts, 8 per token; 2 sequences of 4096.
TEST(CudaBalanceLoss, DeepSeekV3ShapeMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_balance_loss({.tokens = 8192, .experts = 256, .experts_per_token = 8,
                      .options = {.groups = 8, .groups_per_token = 4, .routed_scaling_factor = 2.5f}},
                     2, 111);
}

// 3 sequences of 37 tokens over 13 experts; one sequence of a single token.
TEST(CudaBalanceLoss, AwkwardShapesMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_balance_loss({.tokens = 111, .experts = 13, .experts_per_token = 3, .options = {}}, 3, 121);
  check_balance_loss({.tokens = 1, .experts = 40, .experts_per_token = 2,
                      .options = {.groups = 4, .groups_per_token = 1, .routed_scaling_factor = 1.0f}},
                     1, 131);
}

}  // namespace
}  // namespace hai
