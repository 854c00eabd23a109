#include "framework/checkpoint/checkpoint_commit.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "framework/checkpoint/checkpoint_retention.h"
#include "framework/checkpoint/file_io.h"
#include "framework/core/error.h"

namespace hai {
namespace {

namespace fs = std::filesystem;

void rename_path(const fs::path& from, const fs::path& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    HAI_THROW("cannot rename {} to {}: {}", from.string(), to.string(), std::strerror(errno));
  }
}

CheckpointManifest merge_texts(const CheckpointState& state, const std::vector<std::string>& rank_entries) {
  std::vector<RankEntries> ranks;
  for (size_t rank = 0; rank < rank_entries.size(); ++rank) {
    ranks.push_back(rank_entries_from_text(rank_entries[rank], fmt::format("rank {}'s checkpoint entries", rank)));
  }
  return merge_rank_entries(state, ranks);
}

// Every listed file must be present with the size its rank reported; nothing else may remain.
void check_directory_contents(const fs::path& directory, const std::vector<FileRecord>& files) {
  std::set<std::string> listed;
  for (const FileRecord& file : files) {
    fs::path path = directory / file.name;
    std::error_code error;
    uint64_t bytes = fs::file_size(path, error);
    if (error) HAI_THROW("checkpoint file {} is missing: {}", path.string(), error.message());
    if (bytes != file.bytes) {
      HAI_THROW("checkpoint file {} is {} bytes, its rank wrote {}", path.string(), bytes, file.bytes);
    }
    listed.insert(file.name);
  }
  for (const std::string& name : list_directory(directory.string())) {
    if (!listed.contains(name)) remove_path((directory / name).string());
  }
}

// Renames `from` to `to`; an existing `to` is first moved aside to a .tmp name and deleted afterwards.
void move_into_place(const fs::path& from, const fs::path& to) {
  fs::path aside = to.string() + ".replaced" + std::string(kTemporarySuffix);
  std::error_code error;
  bool replacing = fs::exists(to, error);
  if (replacing) {
    remove_path(aside.string());
    rename_path(to, aside);
  }
  rename_path(from, to);
  sync_directory(to.parent_path().string());
  if (replacing) remove_path(aside.string());
}

void point_latest_at(const fs::path& dir, const std::string& step_name) {
  fs::path latest = dir / kLatestFileName;
  fs::path temporary = latest.string() + std::string(kTemporarySuffix);
  write_file_synced(temporary.string(), step_name + "\n");
  rename_path(temporary, latest);
  sync_directory(dir.string());
}

}  // namespace

std::string commit_checkpoint(const std::string& dir, const CheckpointState& state,
                              const std::vector<std::string>& rank_entries, int64_t keep) {
  HAI_CHECK(!rank_entries.empty() && keep >= 0, "commit of checkpoint step {}: {} ranks, keep {}", state.step,
            rank_entries.size(), keep);
  CheckpointManifest manifest = merge_texts(state, rank_entries);
  std::string step_name = step_dir_name(state.step);
  fs::path final_dir = fs::path(dir) / step_name;
  fs::path temporary_dir = final_dir.string() + std::string(kTemporarySuffix);
  check_directory_contents(temporary_dir, manifest.files);
  write_file_synced((temporary_dir / kManifestFileName).string(), manifest_to_text(manifest));
  sync_directory(temporary_dir.string());
  move_into_place(temporary_dir, final_dir);
  point_latest_at(dir, step_name);
  remove_unfinished_checkpoints(dir, state.step);
  prune_checkpoints(dir, keep, state.step);
  return final_dir.string();
}

}  // namespace hai
