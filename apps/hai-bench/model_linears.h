#pragma once
// The dense linear layers of a model (nn.Linear [out, in] weights; the routed experts are the grouped GEMM's), the
// shapes that gemm_bench and fp8_bench time.

#include <cstdint>
#include <map>
#include <string>

#include "framework/config/config.h"

namespace hai::bench {

struct LinearShape {
  int64_t out = 0;
  int64_t in = 0;
  int64_t count = 0;      // layers that have this linear
  bool fp8_gemm = false;  // its GEMMs run in FP8 under precision.mode fp8
};

// The model's dense linear weights by name without layer prefix and ".weight" ("self_attn.q_a_proj", "lm_head"),
// with how many layers have each.
std::map<std::string, LinearShape> dense_linears(const ModelConfig& model);

}  // namespace hai::bench
