#include "framework/checkpoint/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "framework/core/error.h"

namespace hai {
namespace {

std::string system_reason() { return std::strerror(errno); }

std::span<const std::byte> bytes_of(std::string_view text) {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) HAI_THROW("cannot create {}: {}", path_, system_reason());
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::write(std::span<const std::byte> bytes) {
  HAI_CHECK(fd_ >= 0, "{} is already finished", path_);
  while (!bytes.empty()) {
    ssize_t written = ::write(fd_, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) HAI_THROW("cannot write {}: {}", path_, system_reason());
    bytes = bytes.subspan(static_cast<size_t>(written));
    bytes_written_ += static_cast<uint64_t>(written);
  }
}

void OutputFile::finish() {
  HAI_CHECK(fd_ >= 0, "{} is already finished", path_);
  int fd = std::exchange(fd_, -1);
  if (::fsync(fd) != 0) {
    std::string reason = system_reason();
    ::close(fd);
    HAI_THROW("cannot fsync {}: {}", path_, reason);
  }
  if (::close(fd) != 0) HAI_THROW("cannot close {}: {}", path_, system_reason());
}

InputFile::InputFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) HAI_THROW("cannot open {}: {}", path_, system_reason());
  struct stat status {};
  if (::fstat(fd_, &status) != 0) {
    std::string reason = system_reason();
    ::close(fd_);
    HAI_THROW("cannot stat {}: {}", path_, reason);
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd_);
    HAI_THROW("{} is not a regular file", path_);
  }
  size_ = static_cast<uint64_t>(status.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

void InputFile::read_at(uint64_t offset, std::span<std::byte> out) const {
  HAI_CHECK(offset <= size_ && out.size() <= size_ - offset, "{}: reading {} bytes at {} passes its end ({} bytes)",
            path_, out.size(), offset, size_);
  while (!out.empty()) {
    ssize_t got = ::pread(fd_, out.data(), out.size(), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) HAI_THROW("cannot read {}: {}", path_, system_reason());
    if (got == 0) HAI_THROW("{} ended early (truncated while open?)", path_);
    out = out.subspan(static_cast<size_t>(got));
    offset += static_cast<uint64_t>(got);
  }
}

void sync_directory(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) HAI_THROW("cannot open directory {}: {}", path, system_reason());
  int status = ::fsync(fd);
  std::string reason = system_reason();
  ::close(fd);
  if (status != 0) HAI_THROW("cannot fsync directory {}: {}", path, reason);
}

std::vector<std::string> list_directory(const std::string& path) {
  std::error_code error;
  std::filesystem::directory_iterator iterator(path, error);
  if (error) HAI_THROW("cannot list {}: {}", path, error.message());
  std::vector<std::string> names;
  for (; iterator != std::filesystem::directory_iterator(); iterator.increment(error)) {
    names.push_back(iterator->path().filename().string());
  }
  if (error) HAI_THROW("cannot list {}: {}", path, error.message());
  std::sort(names.begin(), names.end());
  return names;
}

void remove_path(const std::string& path) {
  std::error_code error;
  std::filesystem::remove_all(path, error);
  if (error) HAI_THROW("cannot remove {}: {}", path, error.message());
}

void write_file_synced(const std::string& path, std::string_view contents) {
  OutputFile file(path);
  file.write(bytes_of(contents));
  file.finish();
}

std::string read_whole_file(const std::string& path, uint64_t max_bytes) {
  InputFile file(path);
  if (file.size() > max_bytes) HAI_THROW("{} is {} bytes, more than the {} expected", path, file.size(), max_bytes);
  std::string contents(file.size(), '\0');
  file.read_at(0, std::as_writable_bytes(std::span<char>(contents.data(), contents.size())));
  return contents;
}

}  // namespace hai
