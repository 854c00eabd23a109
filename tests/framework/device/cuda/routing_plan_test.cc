#include <gtest/gtest.h>

#include <string>

#include "framework/device/token_permutation.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/cuda/routing_inputs.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;

// Integer outputs: the GPU plan must equal the CPU plan entry for entry (the sort is stable on both).
constexpr testing::Tolerance kExact{};

// positions [T, K], sources [T * K], expert_offsets [E + 1] start as -1, so an entry left unwritten fails.
OwnedTensor filled_with_minus_one(Shape shape) {
  OwnedTensor tensor(shape, DType::i32);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<int32_t>()[i] = -1;
  return tensor;
}

void check_plan(const Tensor& topk_indices, int64_t experts, const std::string& name) {
  int64_t tokens = topk_indices.size(0), experts_per_token = topk_indices.size(1);
  ParityCase plan;
  plan.output(filled_with_minus_one(Shape{tokens, experts_per_token}), kExact);
  plan.output(filled_with_minus_one(Shape{tokens * experts_per_token}), kExact);
  plan.output(filled_with_minus_one(Shape{experts + 1}), kExact);
  plan.input(testing::copy_to(topk_indices, Device::cpu()));
  plan.run([](const std::vector<Tensor>& t) { build_routing_plan(RoutingPlan{t[0], t[1], t[2]}, t[3]); }, name);
}

void check_routed_plan(const testing::RoutingCase& c, uint64_t seed, const std::string& name) {
  testing::RoutedTokens routed = testing::route_on_cpu(c, testing::router_inputs(c, seed));
  check_plan(routed.topk_indices, c.experts, name);
}

// Uniform indices in [0, E) for T tokens (an expert may repeat within a token: the plan does not care).
OwnedTensor uniform_indices(int64_t tokens, int64_t experts_per_token, int64_t experts, uint64_t seed) {
  OwnedTensor flat = testing::random_indices(tokens * experts_per_token, experts, seed);
  return testing::copy_to(flat.tensor().reshape(Shape{tokens, experts_per_token}), Device::cpu());
}

// The router's choices at bench_moe_1p7b's shape (8192 x 4 over 32 experts) and DeepSeek-V3's (8192 x 8 over 256).
TEST(CudaRoutingPlan, RealisticPlansAreIdentical) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_routed_plan({.tokens = 8192, .experts = 32, .experts_per_token = 4,
                     .options = {.groups = 4, .groups_per_token = 2, .routed_scaling_factor = 1.0f}},
                    201, "routing_plan_bench_moe_1p7b");
  check_routed_plan({.tokens = 8192, .experts = 256, .experts_per_token = 8,
                     .options = {.groups = 8, .groups_per_token = 4, .routed_scaling_factor = 2.5f}},
                    211, "routing_plan_deepseek_v3");
}

// Counts that are no multiple of the kernel's 4096-assignment tile, 13 experts, one expert, and experts that
// receive nothing.
TEST(CudaRoutingPlan, AwkwardPlansAreIdentical) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_plan(uniform_indices(77, 4, 13, 221), 13, "routing_plan_77x4_E13");
  check_plan(uniform_indices(1001, 5, 7, 222), 7, "routing_plan_1001x5_E7");
  check_plan(uniform_indices(3, 1, 1, 223), 1, "routing_plan_3x1_E1");
  check_plan(uniform_indices(50, 2, 3, 224), 300, "routing_plan_50x2_E300_mostly_empty");
}

// Every assignment on one expert: its rows span several tiles and must keep (t, k) order across them.
TEST(CudaRoutingPlan, OneCrowdedExpertKeepsAssignmentOrder) {
  HAI_REQUIRE_CUDA_DEVICE();
  OwnedTensor topk(Shape{5000, 2}, DType::i32);
  for (int64_t i = 0; i < topk.numel(); ++i) topk.data<int32_t>()[i] = i % 97 == 0 ? 1 : 5;
  check_plan(topk, 8, "routing_plan_crowded_expert");
}

}  // namespace
}  // namespace hai
