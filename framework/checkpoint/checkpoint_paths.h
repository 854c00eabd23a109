#pragma once
// The names inside a checkpoint directory (docs/architecture.md "Checkpoints"):
//   <dir>/latest                              text: the name of the newest complete step directory
//   <dir>/step_00001000/manifest.json         the manifest (checkpoint_manifest.h)
//   <dir>/step_00001000/model-rank00000.safetensors, optim-rank00000.safetensors   one pair per rank
//   <dir>/step_00001000.tmp/                  the same while being written; never read

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hai {

// Which file of a rank holds a tensor: the model's parameters, or the optimizer state (moments, EMA, ...).
enum class CheckpointGroup : uint8_t { model, optim };

std::string_view checkpoint_group_name(CheckpointGroup group);
std::optional<CheckpointGroup> parse_checkpoint_group(std::string_view name);

inline constexpr std::string_view kManifestFileName = "manifest.json";
inline constexpr std::string_view kLatestFileName = "latest";
inline constexpr std::string_view kTemporarySuffix = ".tmp";

// "step_00001000" (at least eight digits).
std::string step_dir_name(int64_t step);
// The step of a complete step directory's name ("step_00001000" -> 1000); nullopt for anything else (".tmp" too).
std::optional<int64_t> parse_step_dir_name(std::string_view name);
// "model-rank00000.safetensors".
std::string rank_file_name(CheckpointGroup group, int rank);

}  // namespace hai
