#include "framework/config/closest_key.h"

#include <algorithm>
#include <numeric>

namespace hai {
namespace {

std::string last_part(const std::string& path) {
  std::size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

}  // namespace

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> previous(b.size() + 1), current(b.size() + 1);
  std::iota(previous.begin(), previous.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::optional<std::string> closest_key(const std::string& unknown, const std::vector<std::string>& known) {
  const std::size_t max_distance = std::max<std::size_t>(2, unknown.size() / 5);
  std::optional<std::string> best;
  std::size_t best_distance = max_distance + 1;
  for (const std::string& candidate : known) {
    std::size_t distance = edit_distance(unknown, candidate);
    if (distance < best_distance) best = candidate, best_distance = distance;
  }
  if (best) return best;
  for (const std::string& candidate : known) {
    if (last_part(candidate) == last_part(unknown)) return candidate;
  }
  return std::nullopt;
}

}  // namespace hai
