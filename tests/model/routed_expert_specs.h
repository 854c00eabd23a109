#pragma once
// The parameters of E routed experts as the model declares them under FP8 training (model/parameters.cc):
// "experts.<e>.{gate,up,down}_proj.weight", FP8 copies and no compute copy. For the RoutedExperts tests.

#include <string>
#include <utility>
#include <vector>

#include "framework/params/parameter_spec.h"

namespace hai::testing {

inline void append_fp8_routed_expert_specs(std::vector<ParameterSpec>& specs, int64_t experts, int64_t hidden,
                                           int64_t ffn) {
  for (int64_t e = 0; e < experts; ++e) {
    for (auto [projection, shape] : {std::pair{"gate_proj", Shape{ffn, hidden}},
                                     std::pair{"up_proj", Shape{ffn, hidden}},
                                     std::pair{"down_proj", Shape{hidden, ffn}}}) {
      ParameterSpec spec{"experts." + std::to_string(e) + "." + projection + ".weight", shape,
                         ParameterGroup::expert, ParameterInit::normal, true, true};
      spec.fp8_gemm = true;
      spec.fp8_only = true;
      specs.push_back(spec);
    }
  }
}

}  // namespace hai::testing
