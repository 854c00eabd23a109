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
  int release() { return std::exchange(fd_, -1); }

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
  if (size_ > 0) {  // mmap rejects empty mappings; an empty span needs none
    void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd.get(), 0);
    if (mapping == MAP_FAILED) HAI_THROW("cannot mmap {} ({} bytes): {}", path_, size_, std::strerror(errno));
    data_ = static_cast<const std::byte*>(mapping);
  }
  fd_ = fd.release();
}

void MappedFile::check_not_shrunk() const {
  struct stat status {};
  if (fd_ < 0 || ::fstat(fd_, &status) != 0) HAI_THROW("cannot stat {}: {}", path_, std::strerror(errno));
  auto now = static_cast<size_t>(status.st_size);
  if (now < size_) {
    HAI_THROW("{} shrank from {} to {} bytes while it was being read (a file being rewritten in place?): write a "
              "new file and rename it over the old one instead",
              path_, size_, now);
  }
}

MappedFile::~MappedFile() { unmap(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::unmap() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  data_ = nullptr;
  size_ = 0;
}

}  // namespace hai
