#include "framework/checkpoint/resolve_checkpoint.h"

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "framework/checkpoint/checkpoint_paths.h"
#include "framework/checkpoint/checkpoint_retention.h"
#include "framework/checkpoint/file_io.h"
#include "framework/core/error.h"

namespace hai {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxLatestBytes = 4096;

bool is_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

}  // namespace

std::optional<std::string> latest_checkpoint(const std::string& dir) {
  fs::path latest = fs::path(dir) / kLatestFileName;
  if (!is_file(latest)) return std::nullopt;
  std::string name = read_whole_file(latest.string(), kMaxLatestBytes);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  if (!parse_step_dir_name(name)) HAI_THROW("{} names '{}', not a step directory", latest.string(), name);
  fs::path step_dir = fs::path(dir) / name;
  if (!is_file(step_dir / kManifestFileName)) {
    HAI_THROW("{} names {}, which has no {}", latest.string(), step_dir.string(), kManifestFileName);
  }
  return step_dir.string();
}

std::optional<std::string> resolve_checkpoint(const std::string& dir, const std::string& resume) {
  if (resume == "none") return std::nullopt;
  if (resume == "auto") return latest_checkpoint(dir);
  if (is_file(fs::path(resume) / kManifestFileName)) return resume;
  if (is_file(fs::path(resume) / kLatestFileName)) return latest_checkpoint(resume);
  HAI_THROW("checkpoint.resume: {} holds neither {} nor {}", resume, kManifestFileName, kLatestFileName);
}

std::vector<std::string> resume_candidates(const std::string& dir, const std::string& resume) {
  if (resume != "auto") {
    std::optional<std::string> path = resolve_checkpoint(dir, resume);
    return path ? std::vector<std::string>{*path} : std::vector<std::string>{};
  }
  std::vector<std::string> candidates;
  try {
    if (std::optional<std::string> latest = latest_checkpoint(dir)) candidates.push_back(*latest);
  } catch (const Error& error) {
    spdlog::warn("checkpoint.resume auto: {}; trying the other checkpoints of {}, newest first", error.message(), dir);
  }
  std::error_code error;
  if (!fs::is_directory(dir, error)) return candidates;
  std::vector<int64_t> steps = list_checkpoint_steps(dir);
  for (auto step = steps.rbegin(); step != steps.rend(); ++step) {
    std::string path = (fs::path(dir) / step_dir_name(*step)).string();
    if (std::find(candidates.begin(), candidates.end(), path) == candidates.end()) candidates.push_back(path);
  }
  return candidates;
}

}  // namespace hai
