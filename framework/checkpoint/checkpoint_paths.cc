#include "framework/checkpoint/checkpoint_paths.h"

#include <charconv>

#include <fmt/format.h>

namespace hai {
namespace {

constexpr std::string_view kStepPrefix = "step_";
constexpr size_t kStepDigits = 8;

}  // namespace

std::string_view checkpoint_group_name(CheckpointGroup group) {
  return group == CheckpointGroup::model ? "model" : "optim";
}

std::optional<CheckpointGroup> parse_checkpoint_group(std::string_view name) {
  if (name == "model") return CheckpointGroup::model;
  if (name == "optim") return CheckpointGroup::optim;
  return std::nullopt;
}

std::string step_dir_name(int64_t step) { return fmt::format("{}{:0{}d}", kStepPrefix, step, kStepDigits); }

std::optional<int64_t> parse_step_dir_name(std::string_view name) {
  if (!name.starts_with(kStepPrefix)) return std::nullopt;
  std::string_view digits = name.substr(kStepPrefix.size());
  if (digits.size() < kStepDigits) return std::nullopt;
  int64_t step = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (error != std::errc() || end != digits.data() + digits.size() || step < 0) return std::nullopt;
  if (step_dir_name(step) != name) return std::nullopt;  // only the canonical spelling
  return step;
}

std::string rank_file_name(CheckpointGroup group, int rank) {
  return fmt::format("{}-rank{:05d}.safetensors", checkpoint_group_name(group), rank);
}

}  // namespace hai
