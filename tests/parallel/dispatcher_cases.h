#pragma once
// Inputs and a stand-in expert for the token dispatcher tests (tests/parallel/token_dispatcher*_test.cc): a rank's
// routing (K distinct experts a token, as the router chooses), token rows, and an "expert" that scales each local
// row by its global expert's number + 1, forward and backward, so that every row's trip shows in the result.

#include <cstdint>
#include <numeric>
#include <vector>

#include "framework/core/rng.h"
#include "framework/tensor/tensor.h"
#include "tests/framework/device/test_util.h"

namespace hai::testing {

// [T, K] i32: K distinct experts of E for each token, drawn from seed (a partial Fisher-Yates shuffle).
inline OwnedTensor distinct_topk(int64_t tokens, int64_t experts_per_token, int64_t experts, uint64_t seed) {
  OwnedTensor topk(Shape{tokens, experts_per_token}, DType::i32);
  CounterRng rng(seed, 1);
  uint64_t draw = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<int32_t> order(static_cast<size_t>(experts));
    std::iota(order.begin(), order.end(), 0);
    for (int64_t k = 0; k < experts_per_token; ++k) {
      int64_t pick = k + static_cast<int64_t>(rng.uniform(draw++) * static_cast<float>(experts - k));
      pick = pick < experts ? pick : experts - 1;
      std::swap(order[static_cast<size_t>(k)], order[static_cast<size_t>(pick)]);
      topk.data<int32_t>()[t * experts_per_token + k] = order[static_cast<size_t>(k)];
    }
  }
  return topk;
}

// In place on local rows [R, H] fp32 with local_offsets [L + 1] (host): row r of local expert e *= first + e + 1.
inline void scale_by_expert(const Tensor& rows, const Tensor& local_offsets, int64_t first_expert) {
  const int32_t* offsets = local_offsets.data<int32_t>();
  const int64_t width = rows.size(1);
  for (int64_t e = 0; e + 1 < local_offsets.numel(); ++e) {
    for (int64_t r = offsets[e]; r < offsets[e + 1]; ++r) {
      for (int64_t c = 0; c < width; ++c) rows.data<float>()[r * width + c] *= static_cast<float>(first_expert + e + 1);
    }
  }
}

}  // namespace hai::testing
