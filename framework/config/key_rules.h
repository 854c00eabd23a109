#pragma once
// Per-key value rules for the schema: a description for the docs and a predicate.

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "framework/config/config.h"
#include "framework/core/stop_signal.h"

namespace hai {

template <class T>
struct KeyRule {
  std::string text;  // "> 0"; empty = no rule
  std::function<bool(const T&)> holds;
};

template <class T>
KeyRule<T> non_negative() {
  return {">= 0", [](const T& value) { return value >= T{0}; }};
}

// NOTE: the upper bounds keep every size derived from the config within 64 bits (validate_sizes.cc checks the
// products) and every float the device reads as fp32 finite there.
inline constexpr double kMaxFloat32 = 3.4e38;

// low <= value <= high.
template <class T>
KeyRule<T> in_range(T low, T high) {
  return {fmt::format("in [{}, {}]", low, high), [low, high](const T& value) { return value >= low && value <= high; }};
}

// 0 < value <= high.
inline KeyRule<double> positive_up_to(double high = kMaxFloat32) {
  return {fmt::format("in (0, {}]", high), [high](const double& value) { return value > 0.0 && value <= high; }};
}

inline KeyRule<IntOrAuto> positive_or_auto_up_to(std::int64_t high) {
  return {fmt::format("in [1, {}] or auto", high),
          [high](const IntOrAuto& value) { return !value || (*value > 0 && *value <= high); }};
}

inline KeyRule<std::vector<std::int64_t>> each_in_range(std::int64_t low, std::int64_t high) {
  return {fmt::format("each in [{}, {}]", low, high), [low, high](const std::vector<std::int64_t>& values) {
            for (std::int64_t value : values) {
              if (value < low || value > high) return false;
            }
            return true;
          }};
}

inline KeyRule<double> fraction() {
  return {"in [0, 1]", [](const double& value) { return value >= 0.0 && value <= 1.0; }};
}

inline KeyRule<double> open_fraction() {
  return {"in (0, 1)", [](const double& value) { return value > 0.0 && value < 1.0; }};
}

inline KeyRule<std::array<double, 2>> betas_in_range() {
  return {"each in [0, 1)", [](const std::array<double, 2>& betas) {
            return betas[0] >= 0.0 && betas[0] < 1.0 && betas[1] >= 0.0 && betas[1] < 1.0;
          }};
}

inline KeyRule<std::vector<std::string>> known_stop_signals() {
  return {"each one of SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT, SIGXCPU",
          [](const std::vector<std::string>& names) {
            for (const std::string& name : names) {
              if (!stop_signal_number(name)) return false;
            }
            return true;
          }};
}

inline KeyRule<std::string> not_empty() {
  return {"non-empty", [](const std::string& value) { return !value.empty(); }};
}

}  // namespace hai
