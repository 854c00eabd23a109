#include "framework/config/value_codec.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace hai {

std::string describe_node(const YAML::Node& node) {
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  return "\"" + node.Scalar() + "\"";
}

std::string format_double(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eninf") == std::string::npos) text += ".0";
  return text;
}

std::string quote_yaml_string(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      quoted += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

namespace {

[[noreturn]] void throw_wrong_type(const YAML::Node& node, const std::string& key_path, const KeyLines& lines,
                                   const std::string& expected) {
  throw_config_error(lines, key_path, "expected " + expected + " (got " + describe_node(node) + ")");
}

}  // namespace

std::int64_t read_integer(const YAML::Node& node, const std::string& key_path, const KeyLines& lines) {
  std::int64_t value = 0;
  if (!node.IsScalar() || !YAML::convert<std::int64_t>::decode(node, value)) {
    throw_wrong_type(node, key_path, lines, "an integer");
  }
  return value;
}

double read_number(const YAML::Node& node, const std::string& key_path, const KeyLines& lines) {
  double value = 0.0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value)) throw_wrong_type(node, key_path, lines, "a number");
  if (!std::isfinite(value)) throw_wrong_type(node, key_path, lines, "a finite number");
  return value;
}

bool read_bool(const YAML::Node& node, const std::string& key_path, const KeyLines& lines) {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    throw_wrong_type(node, key_path, lines, "true or false");
  }
  return value;
}

std::string read_string(const YAML::Node& node, const std::string& key_path, const KeyLines& lines) {
  if (!node.IsScalar()) throw_wrong_type(node, key_path, lines, "a string");
  return node.Scalar();
}

IntOrAuto ValueCodec<IntOrAuto>::read(const YAML::Node& node, const std::string& key_path, const KeyLines& lines) {
  if (node.IsScalar() && node.Scalar() == "auto") return std::nullopt;
  std::int64_t value = 0;
  if (!node.IsScalar() || !YAML::convert<std::int64_t>::decode(node, value)) {
    throw_wrong_type(node, key_path, lines, "an integer or auto");
  }
  return value;
}

std::array<double, 2> ValueCodec<std::array<double, 2>>::read(const YAML::Node& node, const std::string& key_path,
                                                               const KeyLines& lines) {
  if (!node.IsSequence() || node.size() != 2) throw_wrong_type(node, key_path, lines, "a list of two numbers");
  return {read_number(node[0], key_path, lines), read_number(node[1], key_path, lines)};
}

std::vector<std::int64_t> ValueCodec<std::vector<std::int64_t>>::read(const YAML::Node& node,
                                                                     const std::string& key_path,
                                                                     const KeyLines& lines) {
  if (!node.IsSequence()) throw_wrong_type(node, key_path, lines, "a list of integers");
  std::vector<std::int64_t> values;
  for (const YAML::Node& element : node) values.push_back(read_integer(element, key_path, lines));
  return values;
}

std::string ValueCodec<std::vector<std::int64_t>>::text(const std::vector<std::int64_t>& value) {
  return fmt::format("[{}]", fmt::join(value, ", "));
}

std::vector<std::string> ValueCodec<std::vector<std::string>>::read(const YAML::Node& node,
                                                                   const std::string& key_path,
                                                                   const KeyLines& lines) {
  if (!node.IsSequence()) throw_wrong_type(node, key_path, lines, "a list of strings");
  std::vector<std::string> values;
  for (const YAML::Node& element : node) values.push_back(read_string(element, key_path, lines));
  return values;
}

std::string ValueCodec<std::vector<std::string>>::text(const std::vector<std::string>& value) {
  return fmt::format("[{}]", fmt::join(value, ", "));
}

}  // namespace hai
