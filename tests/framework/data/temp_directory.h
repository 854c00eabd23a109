#pragma once
// Test helpers: a fresh temporary directory removed with everything in it at the end of the test, and whole-file
// read/write.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "framework/core/error.h"

namespace hai::testing {

class TempDirectory {
 public:
  TempDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hai-data-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) HAI_THROW("cannot create a temporary directory");
    path_ = pattern;
  }
  ~TempDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::vector<char> read_bytes(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>()};
}

// NOTE: an existing file is overwritten in place and then resized, not truncated to zero first: on ext4,
// replacing a truncated file's contents forces a flush to disk on close, which made the fuzz tests slow.
inline void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  {
    bool exists = std::filesystem::exists(path);
    std::fstream stream(path, std::ios::binary | std::ios::out | (exists ? std::ios::in : std::ios::trunc));
    if (!stream) HAI_THROW("cannot write {}", path);
    stream.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::filesystem::resize_file(path, bytes.size());
}

inline void write_text(const std::string& path, const std::string& text) {
  write_bytes(path, std::vector<char>(text.begin(), text.end()));
}

}  // namespace hai::testing
