#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "framework/device/router.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/cuda/routing_inputs.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::RoutingCase;

// The CUDA router repeats the CPU op's rounded operations in its order (sigmoid in double rounded once, fp32
// selection, group sums, renormalisation): scores, indices, weights and d_logits are bit-identical.
constexpr testing::Tolerance kExact{};

std::string name_of(const char* op, const RoutingCase& c) {
  return std::string(op) + "_T" + std::to_string(c.tokens) + "_E" + std::to_string(c.experts) + "_K" +
         std::to_string(c.experts_per_token) + "_G" + std::to_string(c.options.groups) + "of" +
         std::to_string(c.options.groups_per_token) + (c.tie_values > 0 ? "_ties" : "");
}

void check_forward(const RoutingCase& c, uint64_t seed) {
  testing::RouterInputs inputs = testing::router_inputs(c, seed);
  ParityCase forward;
  forward.output(OwnedTensor(Shape{c.tokens, c.experts}, DType::f32), kExact);            // scores
  forward.output(OwnedTensor(Shape{c.tokens, c.experts_per_token}, DType::i32), kExact);  // topk_indices
  forward.output(OwnedTensor(Shape{c.tokens, c.experts_per_token}, DType::f32), kExact);  // topk_weights
  forward.input(std::move(inputs.logits));
  forward.input(std::move(inputs.bias));
  RouterOptions options = c.options;
  forward.run([&](const std::vector<Tensor>& t) { router_forward(t[0], t[1], t[2], t[3], t[4], options); },
              name_of("router_forward", c));
}

void check_backward(const RoutingCase& c, uint64_t seed) {
  testing::RoutedTokens routed = testing::route_on_cpu(c, testing::router_inputs(c, seed));
  ParityCase backward;
  backward.output(testing::random_tensor(Shape{c.tokens, c.experts}, seed + 2), kExact);  // d_logits, overwritten
  backward.input(testing::random_tensor(Shape{c.tokens, c.experts_per_token}, seed + 3));  // d_topk_weights
  backward.input(std::move(routed.scores));
  backward.input(std::move(routed.topk_indices));
  float factor = c.options.routed_scaling_factor;
  backward.run([&](const std::vector<Tensor>& t) { router_backward(t[0], t[1], t[2], t[3], factor); },
               name_of("router_backward", c));
}

void check_router(const RoutingCase& c, uint64_t seed) {
  check_forward(c, seed);
  check_backward(c, seed);
}

// bench_moe_1p7b's router: 8192 tokens (4 x 2048), 32 experts in 4 groups, 2 groups and 4 experts per token.
TEST(CudaRouter, BenchModelShapeIsBitIdentical) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_router({.tokens = 8192, .experts = 32, .experts_per_token = 4,
                .options = {.groups = 4, .groups_per_token = 2, .routed_scaling_factor = 1.0f}},
               11);
}

// DeepSeek-V3's router: 256 experts in 8 groups, 4 groups and 8 experts per token, factor 2.5.
TEST(CudaRouter, DeepSeekV3ShapeIsBitIdentical) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_router({.tokens = 8192, .experts = 256, .experts_per_token = 8,
                .options = {.groups = 8, .groups_per_token = 4, .routed_scaling_factor = 2.5f}},
               21);
}

// Sizes that are no multiple of a warp: 13 experts without groups, 60 in 6 groups of 10, groups of one expert,
// and every group kept.
TEST(CudaRouter, AwkwardShapesAreBitIdentical) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_router({.tokens = 77, .experts = 13, .experts_per_token = 3, .options = {}}, 31);
  check_router({.tokens = 1001, .experts = 60, .experts_per_token = 5,
                .options = {.groups = 6, .groups_per_token = 3, .routed_scaling_factor = 1.5f}},
               41);
  check_router({.tokens = 129, .experts = 8, .experts_per_token = 3,
                .options = {.groups = 8, .groups_per_token = 3, .routed_scaling_factor = 1.0f}},
               51);
  check_router({.tokens = 33, .experts = 96, .experts_per_token = 32,
                .options = {.groups = 3, .groups_per_token = 3, .routed_scaling_factor = 1.0f}},
               61);
}

// Logits and bias from 3 or 5 repeated values: equal selection values and equal group scores everywhere, so the
// lower-index rule decides most choices, between experts and between groups.
TEST(CudaRouter, TiesFollowTheLowerIndexRule) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_router({.tokens = 4096, .experts = 32, .experts_per_token = 4,
                .options = {.groups = 4, .groups_per_token = 2, .routed_scaling_factor = 1.0f}, .tie_values = 3},
               71);
  check_router({.tokens = 2048, .experts = 256, .experts_per_token = 8,
                .options = {.groups = 8, .groups_per_token = 4, .routed_scaling_factor = 2.5f}, .tie_values = 5},
               81);
  check_router({.tokens = 500, .experts = 13, .experts_per_token = 4, .options = {}, .tie_values = 2}, 91);
}

}  // namespace
}  // namespace hai
