#pragma once
// MappedFile: a whole file mapped read-only into memory (mmap), unmapped on destruction. The file stays open, so
// that a reader can check that it did not shrink under the mapping (reading a page past its end raises SIGBUS).

#include <cstddef>
#include <span>
#include <string>

namespace hai {

class MappedFile {
 public:
  // Throws hai::Error naming the path if the file cannot be opened or mapped.
  explicit MappedFile(std::string path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Empty for an empty file. NOTE: the mapping is page-aligned, so an offset that is a multiple of an element's
  // size gives an aligned element.
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  // Throws hai::Error naming the file when it is now shorter than when it was mapped.
  void check_not_shrunk() const;

 private:
  void unmap();

  std::string path_;
  int fd_ = -1;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hai
