#include "apps/hai-train/input_checks.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "apps/hai-train/user_error.h"

namespace hai {
namespace {

// PREFIX.idx and PREFIX.bin of the indexed dataset that `key` names.
void check_dataset(const std::string& key, const std::string& prefix) {
  for (const char* suffix : {".idx", ".bin"}) {
    std::string path = prefix + suffix;
    std::error_code error;
    auto status = std::filesystem::status(path, error);
    std::string where = fmt::format("{}: {}{}", key, path, relative_path_note(path));
    if (!std::filesystem::exists(status)) {
      throw UserError(fmt::format("{}: no such file; make the dataset with hai-data (README \"Running\") or fix {}",
                                  where, key));
    }
    if (!std::filesystem::is_regular_file(status)) throw UserError(where + ": not a regular file");
    if (::access(path.c_str(), R_OK) != 0) throw UserError(where + ": not readable (permission denied)");
  }
}

}  // namespace

void check_input_files(const Config& config) {
  if (config.data.source == DataSource::indexed) {
    check_dataset("data.path", config.data.path);
    if (!config.data.eval_path.empty()) check_dataset("data.eval_path", config.data.eval_path);
  }
  const std::string& resume = config.checkpoint.resume;
  if (resume != "auto" && resume != "none" && !std::filesystem::is_directory(resume)) {
    throw UserError(fmt::format("checkpoint.resume: {}{}: no such directory (a step directory, a checkpoint.dir "
                                "holding `latest`, auto or none)",
                                resume, relative_path_note(resume)));
  }
}

}  // namespace hai
