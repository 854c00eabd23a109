#include "framework/data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "framework/core/error.h"

namespace hai {
namespace {

// Closes a file descriptor when it goes out of scope.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

MappedFile::MappedFile(std::string path) : path_(std::move(path)) {
  ScopedFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) HAI_THROW("cannot open {}: {}", path_, std::strerror(errno));
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) HAI_THROW("cannot stat {}: {}", path_, std::strerror(errno));
  if (!S_ISREG(status.st_mode)) HAI_THROW("{} is not a regular file", path_);
  size_ = static_cast<size_t>(status.st_size);
  if (size_ == 0) return;  // mmap rejects empty mappings; an empty span needs none
  void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (mapping == MAP_FAILED) HAI_THROW("cannot mmap {} ({} bytes): {}", path_, size_, std::strerror(errno));
  data_ = static_cast<const std::byte*>(mapping);
}

MappedFile::~MappedFile() { unmap(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::unmap() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace hai
