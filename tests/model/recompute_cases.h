#pragma once
// What the recompute tests share: the (precision, recompute mode) cases they run and a bitwise tensor comparison.

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/config/config_enums.h"
#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"

namespace hai::testing {

// Both undefined (a parameter without a gradient), or the same bytes.
inline bool same_bits(const Tensor& expected, const Tensor& actual) {
  if (expected.raw() == nullptr || actual.raw() == nullptr) return expected.raw() == actual.raw();
  return expected.bytes() == actual.bytes() && std::memcmp(expected.raw(), actual.raw(), expected.bytes()) == 0;
}

// A CPU store of `specs` (seeded) whose compute copy is that of `precision`: fp32, or bf16 (fp8: with the FP8
// weight copies).
inline std::unique_ptr<ParameterStore> precision_store(std::vector<ParameterSpec> specs, PrecisionMode precision) {
  auto store = std::make_unique<ParameterStore>(std::move(specs), Device::cpu(),
                                                precision == PrecisionMode::fp32 ? DType::f32 : DType::bf16,
                                                Fp8WeightOptions{.enabled = precision == PrecisionMode::fp8});
  store->initialize(5, 0.3);
  store->refresh_compute_copy();
  return store;
}

struct RecomputeCase {
  PrecisionMode precision;
  RecomputeMode recompute;
};

inline std::string recompute_case_name(const ::testing::TestParamInfo<RecomputeCase>& info) {
  return std::string(to_string(info.param.precision)) + "_" + std::string(to_string(info.param.recompute));
}

// Every precision with each mode that recomputes (compared with RecomputeMode::none).
inline auto recompute_cases() {
  return ::testing::Values(RecomputeCase{PrecisionMode::fp32, RecomputeMode::selective},
                           RecomputeCase{PrecisionMode::fp32, RecomputeMode::full},
                           RecomputeCase{PrecisionMode::bf16, RecomputeMode::selective},
                           RecomputeCase{PrecisionMode::bf16, RecomputeMode::full},
                           RecomputeCase{PrecisionMode::fp8, RecomputeMode::selective},
                           RecomputeCase{PrecisionMode::fp8, RecomputeMode::full});
}

}  // namespace hai::testing
