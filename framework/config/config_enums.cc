#include "framework/config/config_enums.h"

#include <array>

namespace hai {

template <>
std::span<const EnumName<PipelineSchedule>> enum_names() {
  static constexpr std::array<EnumName<PipelineSchedule>, 3> names = {{
      {PipelineSchedule::one_f_one_b, "1f1b"},
      {PipelineSchedule::dualpipe, "dualpipe"},
      {PipelineSchedule::dualpipev, "dualpipev"},
  }};
  return names;
}

template <>
std::span<const EnumName<LrSchedule>> enum_names() {
  static constexpr std::array<EnumName<LrSchedule>, 3> names = {{
      {LrSchedule::cosine, "cosine"},
      {LrSchedule::constant, "constant"},
      {LrSchedule::deepseek_v3, "deepseek_v3"},
  }};
  return names;
}

template <>
std::span<const EnumName<PrecisionMode>> enum_names() {
  static constexpr std::array<EnumName<PrecisionMode>, 4> names = {{
      {PrecisionMode::fp32, "fp32"},
      {PrecisionMode::bf16, "bf16"},
      {PrecisionMode::fp16, "fp16"},
      {PrecisionMode::fp8, "fp8"},
  }};
  return names;
}

template <>
std::span<const EnumName<MomentDType>> enum_names() {
  static constexpr std::array<EnumName<MomentDType>, 2> names = {{
      {MomentDType::fp32, "fp32"},
      {MomentDType::bf16, "bf16"},
  }};
  return names;
}

template <>
std::span<const EnumName<RecomputeMode>> enum_names() {
  static constexpr std::array<EnumName<RecomputeMode>, 3> names = {{
      {RecomputeMode::none, "none"},
      {RecomputeMode::selective, "selective"},
      {RecomputeMode::full, "full"},
  }};
  return names;
}

template <>
std::span<const EnumName<DataSource>> enum_names() {
  static constexpr std::array<EnumName<DataSource>, 2> names = {{
      {DataSource::indexed, "indexed"},
      {DataSource::synthetic, "synthetic"},
  }};
  return names;
}

template <>
std::span<const EnumName<RuntimeDevice>> enum_names() {
  static constexpr std::array<EnumName<RuntimeDevice>, 3> names = {{
      {RuntimeDevice::cpu, "cpu"},
      {RuntimeDevice::cuda, "cuda"},
      {RuntimeDevice::automatic, "auto"},
  }};
  return names;
}

}  // namespace hai
