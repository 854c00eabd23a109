#pragma once
// Helpers for checkpoint tests: a scratch directory per test, file byte access, and an expectation that a call
// throws hai::Error mentioning given text.

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

#include "framework/core/error.h"

namespace hai::testing {

// A fresh empty directory under the test temp dir, removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            (std::string("hai_ckpt_") + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string file_text(const std::string& path) {
  std::vector<char> bytes = file_bytes(path);
  return {bytes.begin(), bytes.end()};
}

// Runs `call`, expecting a hai::Error whose message contains every one of `fragments`.
template <typename Call>
void expect_error(Call call, std::initializer_list<std::string> fragments) {
  try {
    call();
    ADD_FAILURE() << "no hai::Error thrown";
  } catch (const hai::Error& error) {
    for (const std::string& fragment : fragments) {
      EXPECT_NE(error.message().find(fragment), std::string::npos)
          << "message '" << error.message() << "' lacks '" << fragment << "'";
    }
  }
}

}  // namespace hai::testing
