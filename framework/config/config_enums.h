#pragma once
// The YAML names of the config's enums, one table per enum: parsing, writing, the docs and error messages use them.

#include <span>
#include <string_view>

#include "framework/config/config.h"

namespace hai {

template <class Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};

// Every value of Enum with its YAML name, in the order the docs list them.
template <class Enum>
std::span<const EnumName<Enum>> enum_names();

template <>
std::span<const EnumName<PipelineSchedule>> enum_names();
template <>
std::span<const EnumName<LrSchedule>> enum_names();
template <>
std::span<const EnumName<PrecisionMode>> enum_names();
template <>
std::span<const EnumName<MomentDType>> enum_names();
template <>
std::span<const EnumName<RecomputeMode>> enum_names();
template <>
std::span<const EnumName<DataSource>> enum_names();
template <>
std::span<const EnumName<RuntimeDevice>> enum_names();

template <class Enum>
std::string_view to_string(Enum value) {
  for (const auto& entry : enum_names<Enum>()) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

}  // namespace hai
