#pragma once
// POSIX file access for checkpoints: whole-file writes that end in fsync, positioned reads, directory fsync.
// Every failure is a hai::Error naming the path and the system's reason.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hai {

// Creates (truncates) a file; write() appends; finish() fsyncs and closes it. Destroyed unfinished, it is closed
// without fsync (the caller's error path; the partial file stays and is cleaned up with its directory).
class OutputFile {
 public:
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::span<const std::byte> bytes);
  void finish();
  uint64_t bytes_written() const { return bytes_written_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t bytes_written_ = 0;
};

// A file opened for positioned reads.
class InputFile {
 public:
  explicit InputFile(std::string path);
  ~InputFile();
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Fills `out` from byte `offset`; throws if the file ends first.
  void read_at(uint64_t offset, std::span<std::byte> out) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// fsync a directory, so that the names created or renamed in it survive a crash.
void sync_directory(const std::string& path);

// The names of the entries of a directory, sorted.
std::vector<std::string> list_directory(const std::string& path);

// Removes a file or a directory tree; nothing to remove is fine.
void remove_path(const std::string& path);

// Writes `contents` to `path` and fsyncs it (not its directory).
void write_file_synced(const std::string& path, std::string_view contents);

// The whole file as a string; throws if it is larger than max_bytes.
std::string read_whole_file(const std::string& path, uint64_t max_bytes);

}  // namespace hai
