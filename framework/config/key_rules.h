#pragma once
// Per-key value rules for the schema: a description for the docs and a predicate.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/config/config.h"

namespace hai {

template <class T>
struct KeyRule {
  std::string text;  // "> 0"; empty = no rule
  bool (*holds)(const T&) = nullptr;
};

template <class T>
KeyRule<T> positive() {
  return {"> 0", [](const T& value) { return value > T{0}; }};
}

template <class T>
KeyRule<T> non_negative() {
  return {">= 0", [](const T& value) { return value >= T{0}; }};
}

inline KeyRule<double> at_least_one() {
  return {">= 1", [](const double& value) { return value >= 1.0; }};
}

inline KeyRule<double> fraction() {
  return {"in [0, 1]", [](const double& value) { return value >= 0.0 && value <= 1.0; }};
}

inline KeyRule<double> open_fraction() {
  return {"in (0, 1)", [](const double& value) { return value > 0.0 && value < 1.0; }};
}

inline KeyRule<IntOrAuto> positive_or_auto() {
  return {"> 0 or auto", [](const IntOrAuto& value) { return !value || *value > 0; }};
}

inline KeyRule<std::array<double, 2>> betas_in_range() {
  return {"each in [0, 1)", [](const std::array<double, 2>& betas) {
            return betas[0] >= 0.0 && betas[0] < 1.0 && betas[1] >= 0.0 && betas[1] < 1.0;
          }};
}

inline KeyRule<std::vector<std::int64_t>> each_positive() {
  return {"each > 0", [](const std::vector<std::int64_t>& values) {
            for (std::int64_t value : values) {
              if (value <= 0) return false;
            }
            return true;
          }};
}

inline KeyRule<std::string> not_empty() {
  return {"non-empty", [](const std::string& value) { return !value.empty(); }};
}

}  // namespace hai
