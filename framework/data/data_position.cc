#include "framework/data/data_position.h"

#include <charconv>

#include <fmt/format.h>

#include "framework/core/error.h"

namespace hai {
namespace {

// Reads "<key>=<unsigned>" at the front of text and removes it (and one following space).
uint64_t take_field(std::string_view& text, std::string_view key, std::string_view whole) {
  if (!text.starts_with(key) || text.substr(key.size()).substr(0, 1) != "=") {
    HAI_THROW("data position \"{}\": expected the field {}", whole, key);
  }
  text.remove_prefix(key.size() + 1);
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) {
    HAI_THROW("data position \"{}\": {} is not an unsigned integer", whole, key);
  }
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  if (text.starts_with(' ')) text.remove_prefix(1);
  return value;
}

}  // namespace

std::string DataPosition::serialize() const {
  return fmt::format("consumed_samples={} seed={} windows_per_epoch={}", consumed_samples, seed, windows_per_epoch);
}

DataPosition DataPosition::parse(std::string_view text) {
  std::string_view rest = text;
  DataPosition position;
  position.consumed_samples = take_field(rest, "consumed_samples", text);
  position.seed = take_field(rest, "seed", text);
  position.windows_per_epoch = take_field(rest, "windows_per_epoch", text);
  if (!rest.empty()) HAI_THROW("data position \"{}\": unexpected text \"{}\"", text, rest);
  return position;
}

}  // namespace hai
