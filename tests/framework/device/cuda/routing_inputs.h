#pragma once
// Router inputs and the CPU router's outputs for the routing parity tests (router, balance loss, routing plan).

#include <cstdint>

#include "framework/core/rng.h"
#include "framework/device/router.h"
#include "framework/tensor/tensor.h"
#include "tests/framework/device/test_util.h"

namespace hai::testing {

struct RoutingCase {
  int64_t tokens;             // T
  int64_t experts;            // E
  int64_t experts_per_token;  // K
  RouterOptions options;
  int64_t tie_values = 0;  // > 0: logits and bias drawn from this many distinct values, so scores tie often
};

// [T, E] logits ~ N(0, 1.5^2) and [E] bias ~ N(0, 0.05^2), or, for ties, both from a few repeated values.
struct RouterInputs {
  OwnedTensor logits, bias;
};

// count fp32 values: `tie_values` levels -1, -1 + step, ... (scaled), or normal noise when tie_values == 0.
inline OwnedTensor routing_values(Shape shape, int64_t tie_values, float scale, uint64_t seed) {
  if (tie_values == 0) return random_tensor(shape, seed, scale);
  OwnedTensor values(shape, DType::f32);
  CounterRng rng(seed, 0);
  for (int64_t i = 0; i < values.numel(); ++i) {
    int64_t level = static_cast<int64_t>(rng.bits(static_cast<uint64_t>(i)) % static_cast<uint64_t>(tie_values));
    values.data<float>()[i] = scale * (static_cast<float>(level) / static_cast<float>(tie_values) - 0.5f);
  }
  return values;
}

inline RouterInputs router_inputs(const RoutingCase& c, uint64_t seed) {
  return {routing_values(Shape{c.tokens, c.experts}, c.tie_values, 1.5f, seed),
          routing_values(Shape{c.experts}, c.tie_values, c.tie_values > 0 ? 0.5f : 0.05f, seed + 1)};
}

// The CPU router's outputs for these inputs.
struct RoutedTokens {
  OwnedTensor scores, topk_indices, topk_weights;
};

inline RoutedTokens route_on_cpu(const RoutingCase& c, const RouterInputs& inputs) {
  RoutedTokens routed{OwnedTensor(Shape{c.tokens, c.experts}, DType::f32),
                      OwnedTensor(Shape{c.tokens, c.experts_per_token}, DType::i32),
                      OwnedTensor(Shape{c.tokens, c.experts_per_token}, DType::f32)};
  router_forward(routed.scores, routed.topk_indices, routed.topk_weights, inputs.logits, inputs.bias, c.options);
  return routed;
}

}  // namespace hai::testing
