#pragma once
// Shared by the optimizer tests (AdamW, ZeRO-1): a small parameter list and the AdamW settings they train with.

#include <vector>

#include "framework/config/config.h"
#include "framework/params/parameter_spec.h"

namespace hai::testing {

// A matrix with weight decay, a norm and a bias without, a non-trainable bias between them (which breaks the
// contiguity of the value and gradient buffers), and two expert matrices (one contiguous run with weight decay):
// 12 + 4 + 3 + 10 + 10 = 39 trainable elements (prime to 2 and 4, so that ZeRO-1's chunk boundaries fall inside
// parameters), "gate.bias" [2] not trainable.
inline std::vector<ParameterSpec> optimizer_test_specs() {
  return {
      {"w.weight", Shape{3, 4}, ParameterGroup::dense, ParameterInit::normal, true, true},
      {"w.norm", Shape{4}, ParameterGroup::dense, ParameterInit::ones, false, true},
      {"gate.bias", Shape{2}, ParameterGroup::dense, ParameterInit::zeros, false, false},
      {"x.bias", Shape{3}, ParameterGroup::dense, ParameterInit::zeros, false, true},
      {"experts.0.weight", Shape{2, 5}, ParameterGroup::expert, ParameterInit::normal, true, true},
      {"experts.1.weight", Shape{2, 5}, ParameterGroup::expert, ParameterInit::normal, true, true},
  };
}

inline OptimizerConfig optimizer_test_config(MomentDType moment_dtype = MomentDType::fp32) {
  OptimizerConfig config;
  config.betas = {0.8, 0.9};
  config.eps = 1e-6;
  config.weight_decay = 0.25;
  config.moment_dtype = moment_dtype;
  return config;
}

}  // namespace hai::testing
