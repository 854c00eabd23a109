#pragma once
// How each value type of the config is read from YAML, written as YAML text and JSON, and named in the docs.
// ValueCodec<T>::read throws ConfigError(key_path, "expected ...") for a node of the wrong type.

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "framework/config/config.h"
#include "framework/config/config_enums.h"
#include "framework/config/config_error.h"

namespace hai {

// "a map", "a list", "nothing" or the scalar in quotes: what a wrong-typed node holds, for error messages.
std::string describe_node(const YAML::Node& node);

// The shortest text that reads back as the same double, always with a '.' or an exponent ("1.0", "1e-08").
std::string format_double(double value);

// A YAML double-quoted string.
std::string quote_yaml_string(const std::string& text);

// Each read_* throws ConfigError(key_path, "expected <kind> (got ...)") with the node's line when it is not one.
std::int64_t read_integer(const YAML::Node& node, const std::string& key_path, const KeyLines& lines);
double read_number(const YAML::Node& node, const std::string& key_path, const KeyLines& lines);
bool read_bool(const YAML::Node& node, const std::string& key_path, const KeyLines& lines);
std::string read_string(const YAML::Node& node, const std::string& key_path, const KeyLines& lines);

template <class T>
struct ValueCodec;

template <>
struct ValueCodec<std::int64_t> {
  static std::string type_name() { return "int"; }
  static std::int64_t read(const YAML::Node& node, const std::string& key_path, const KeyLines& lines) {
    return read_integer(node, key_path, lines);
  }
  static std::string text(std::int64_t value) { return std::to_string(value); }
  static nlohmann::json json(std::int64_t value) { return value; }
};

template <>
struct ValueCodec<double> {
  static std::string type_name() { return "float"; }
  static double read(const YAML::Node& node, const std::string& key_path, const KeyLines& lines) {
    return read_number(node, key_path, lines);
  }
  static std::string text(double value) { return format_double(value); }
  static nlohmann::json json(double value) { return value; }
};

template <>
struct ValueCodec<bool> {
  static std::string type_name() { return "bool"; }
  static bool read(const YAML::Node& node, const std::string& key_path, const KeyLines& lines) {
    return read_bool(node, key_path, lines);
  }
  static std::string text(bool value) { return value ? "true" : "false"; }
  static nlohmann::json json(bool value) { return value; }
};

template <>
struct ValueCodec<std::string> {
  static std::string type_name() { return "string"; }
  static std::string read(const YAML::Node& node, const std::string& key_path, const KeyLines& lines) {
    return read_string(node, key_path, lines);
  }
  static std::string text(const std::string& value) { return quote_yaml_string(value); }
  static nlohmann::json json(const std::string& value) { return value; }
};

template <>
struct ValueCodec<IntOrAuto> {
  static std::string type_name() { return "int | auto"; }
  static IntOrAuto read(const YAML::Node& node, const std::string& key_path, const KeyLines& lines);
  static std::string text(const IntOrAuto& value) { return value ? std::to_string(*value) : "auto"; }
  static nlohmann::json json(const IntOrAuto& value) {
    return value ? nlohmann::json(*value) : nlohmann::json("auto");
  }
};

template <>
struct ValueCodec<std::array<double, 2>> {
  static std::string type_name() { return "[float, float]"; }
  static std::array<double, 2> read(const YAML::Node& node, const std::string& key_path, const KeyLines& lines);
  static std::string text(const std::array<double, 2>& value) {
    return "[" + format_double(value[0]) + ", " + format_double(value[1]) + "]";
  }
  static nlohmann::json json(const std::array<double, 2>& value) { return {value[0], value[1]}; }
};

template <>
struct ValueCodec<std::vector<std::int64_t>> {
  static std::string type_name() { return "[int, ...]"; }
  static std::vector<std::int64_t> read(const YAML::Node& node, const std::string& key_path, const KeyLines& lines);
  static std::string text(const std::vector<std::int64_t>& value);
  static nlohmann::json json(const std::vector<std::int64_t>& value) { return value; }
};

template <>
struct ValueCodec<std::vector<std::string>> {
  static std::string type_name() { return "[string, ...]"; }
  static std::vector<std::string> read(const YAML::Node& node, const std::string& key_path, const KeyLines& lines);
  static std::string text(const std::vector<std::string>& value);
  static nlohmann::json json(const std::vector<std::string>& value) { return value; }
};

// Enums are written by their YAML names (config_enums.h).
template <class Enum>
  requires std::is_enum_v<Enum>
struct ValueCodec<Enum> {
  static std::string type_name() {
    std::string names;
    for (const auto& entry : enum_names<Enum>()) names += (names.empty() ? "" : " | ") + std::string(entry.name);
    return names;
  }
  static Enum read(const YAML::Node& node, const std::string& key_path, const KeyLines& lines) {
    std::string name = read_string(node, key_path, lines);
    for (const auto& entry : enum_names<Enum>()) {
      if (entry.name == name) return entry.value;
    }
    throw_config_error(lines, key_path, "expected one of " + type_name() + " (got \"" + name + "\")");
  }
  static std::string text(Enum value) { return std::string(to_string(value)); }
  static nlohmann::json json(Enum value) { return std::string(to_string(value)); }
};

}  // namespace hai
