#include "framework/data/atomic_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "framework/core/error.h"

namespace hai {
namespace {

// fsync the directory holding `path`, so that a rename into it survives a crash.
void sync_directory_of(const std::string& path) {
  std::filesystem::path directory = std::filesystem::path(path).parent_path();
  if (directory.empty()) directory = ".";
  int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) HAI_THROW("cannot open directory {}: {}", directory.string(), std::strerror(errno));
  int status = ::fsync(fd);
  int sync_errno = errno;
  ::close(fd);
  if (status != 0) HAI_THROW("cannot fsync directory {}: {}", directory.string(), std::strerror(sync_errno));
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  fd_ = ::open(temporary_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) HAI_THROW("cannot create {}: {}", temporary_path(), std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!published_) std::remove(temporary_path().c_str());
}

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
  HAI_CHECK(fd_ >= 0, "{} is already closed", temporary_path());
  while (!bytes.empty()) {
    ssize_t written = ::write(fd_, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) HAI_THROW("cannot write {}: {}", temporary_path(), std::strerror(errno));
    bytes = bytes.subspan(static_cast<size_t>(written));
    bytes_written_ += static_cast<uint64_t>(written);
  }
}

void AtomicFileWriter::sync() {
  if (fd_ < 0) return;
  int fd = std::exchange(fd_, -1);
  int status = ::fsync(fd);
  int sync_errno = errno;
  if (::close(fd) != 0 && status == 0) HAI_THROW("cannot close {}: {}", temporary_path(), std::strerror(errno));
  if (status != 0) HAI_THROW("cannot fsync {}: {}", temporary_path(), std::strerror(sync_errno));
}

void AtomicFileWriter::publish() {
  HAI_CHECK(!published_, "{} is already published", path_);
  sync();
  if (std::rename(temporary_path().c_str(), path_.c_str()) != 0) {
    HAI_THROW("cannot rename {} to {}: {}", temporary_path(), path_, std::strerror(errno));
  }
  published_ = true;
  sync_directory_of(path_);
}

}  // namespace hai
