#include "framework/checkpoint/checkpoint_retention.h"

#include <algorithm>
#include <filesystem>

#include "framework/checkpoint/checkpoint_paths.h"
#include "framework/checkpoint/file_io.h"

namespace hai {
namespace {

std::string child(const std::string& dir, std::string_view name) {
  return (std::filesystem::path(dir) / name).string();
}

// The step of "step_00000005.tmp" or "step_00000005.replaced.tmp"; nullopt for other names.
std::optional<int64_t> parse_temporary_dir_name(std::string_view name) {
  constexpr std::string_view kReplaced = ".replaced";
  if (!name.ends_with(kTemporarySuffix)) return std::nullopt;
  name.remove_suffix(kTemporarySuffix.size());
  if (name.ends_with(kReplaced)) name.remove_suffix(kReplaced.size());
  return parse_step_dir_name(name);
}

}  // namespace

std::vector<int64_t> list_checkpoint_steps(const std::string& dir) {
  std::vector<int64_t> steps;
  for (const std::string& name : list_directory(dir)) {
    std::optional<int64_t> step = parse_step_dir_name(name);
    std::error_code error;
    if (step && std::filesystem::is_regular_file(child(child(dir, name), kManifestFileName), error)) {
      steps.push_back(*step);
    }
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

void remove_unfinished_checkpoints(const std::string& dir, int64_t up_to_step) {
  for (const std::string& name : list_directory(dir)) {
    std::optional<int64_t> step = parse_temporary_dir_name(name);
    if (step && *step <= up_to_step) remove_path(child(dir, name));
  }
}

void prune_checkpoints(const std::string& dir, int64_t keep, int64_t newest_step) {
  if (keep == 0) return;
  std::vector<int64_t> others = list_checkpoint_steps(dir);
  std::erase(others, newest_step);
  int64_t kept_others = std::min<int64_t>(keep - 1, static_cast<int64_t>(others.size()));
  others.resize(others.size() - static_cast<size_t>(kept_others));  // the oldest, beyond the kept ones
  for (int64_t step : others) remove_path(child(dir, step_dir_name(step)));
}

}  // namespace hai
