#include "apps/hai-train/user_error.h"

#include <filesystem>
#include <system_error>

namespace hai {

std::string relative_path_note(const std::string& path) {
  if (std::filesystem::path(path).is_absolute()) return "";
  std::error_code error;
  std::filesystem::path cwd = std::filesystem::current_path(error);
  return error ? " (relative to the current directory)" : fmt::format(" (relative to {})", cwd.string());
}

}  // namespace hai
