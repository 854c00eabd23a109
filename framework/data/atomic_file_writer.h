#pragma once
// AtomicFileWriter: writes `path` through the temporary `path.tmp`. sync() flushes it to disk; publish() renames it
// over `path` (atomic on POSIX) and syncs the directory. Until publish() the final path is untouched, so a crash
// never leaves a half-written file under the real name; a writer destroyed before publish() deletes its temporary.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace hai {

class AtomicFileWriter {
 public:
  // Creates (truncates) path.tmp. Throws hai::Error naming the path on failure.
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const std::byte> bytes);
  // fsync and close the temporary; no more writes after it.
  void sync();
  // Rename the temporary to the final path (calls sync() first if needed).
  void publish();

  uint64_t bytes_written() const { return bytes_written_; }
  const std::string& path() const { return path_; }
  std::string temporary_path() const { return path_ + ".tmp"; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t bytes_written_ = 0;
  bool published_ = false;
};

}  // namespace hai
