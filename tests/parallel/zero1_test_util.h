#pragma once
// Shared by the ZeRO-1 tests: a small parameter list whose chunk boundaries fall inside parameters for every
// group size of the tests, with a non-trainable parameter breaking buffer contiguity, and the reference AdamW.

#include <vector>

#include "framework/config/config.h"
#include "framework/params/parameter_store.h"
#include "tests/framework/device/test_util.h"

namespace hai::testing {

// 12 + 4 + 3 + 10 + 10 = 39 trainable elements (prime to 2 and 4), "gate.bias" [2] not trainable.
inline std::vector<ParameterSpec> zero1_specs() {
  return {
      {"w.weight", Shape{3, 4}, ParameterGroup::dense, ParameterInit::normal, true, true},
      {"w.norm", Shape{4}, ParameterGroup::dense, ParameterInit::ones, false, true},
      {"gate.bias", Shape{2}, ParameterGroup::dense, ParameterInit::zeros, false, false},
      {"x.bias", Shape{3}, ParameterGroup::dense, ParameterInit::zeros, false, true},
      {"experts.0.weight", Shape{2, 5}, ParameterGroup::expert, ParameterInit::normal, true, true},
      {"experts.1.weight", Shape{2, 5}, ParameterGroup::expert, ParameterInit::normal, true, true},
  };
}

inline OptimizerConfig zero1_optimizer_config() {
  OptimizerConfig config;
  config.betas = {0.8, 0.9};
  config.eps = 1e-6;
  config.weight_decay = 0.25;
  config.moment_dtype = MomentDType::fp32;
  return config;
}

// Fills the store's gradients with the gradients of `rank` at `step` (known, different per rank and step).
inline void fill_rank_grads(ParameterStore& store, int rank, int64_t step) {
  OwnedTensor random = random_tensor(Shape{store.grads().numel()}, 100 * static_cast<uint64_t>(step) + rank);
  copy_tensor(store.grads(), random);
}

}  // namespace hai::testing
