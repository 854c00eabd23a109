#include "apps/hai-train/run_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>

#include <spdlog/sinks/base_sink.h>

#include "apps/hai-train/user_error.h"
#include "framework/core/logging.h"

namespace hai {
namespace {

// An spdlog sink appending to one file, opened at the first line. A line that cannot be written is dropped (the
// console has it too): a full disk must not turn a log line into a crash.
class AppendFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit AppendFileSink(std::string path) : path_(std::move(path)) {}
  ~AppendFileSink() override {
    if (fd_ >= 0) ::close(fd_);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    if (fd_ < 0) {
      std::error_code ignored;
      std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ignored);
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd_ < 0) return;
    }
    spdlog::memory_buf_t line;
    formatter_->format(message, line);
    ssize_t ignored = ::write(fd_, line.data(), line.size());
    (void)ignored;
  }
  void flush_() override {}

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace

void add_run_log(const std::string& run_dir, int rank) {
  if (rank == 0) {
    std::error_code error;
    std::filesystem::create_directories(run_dir, error);
    if (error) {
      throw UserError(fmt::format("logging.run_dir: cannot create {}{}: {}", run_dir, relative_path_note(run_dir),
                                  error.message()));
    }
  }
  auto sink = std::make_shared<AppendFileSink>((std::filesystem::path(run_dir) / "train.log").string());
  sink->set_pattern(log_pattern(rank));
  // NOTE: rank 0's file also takes the debug lines (where an error was raised); the console keeps its level.
  spdlog::logger& logger = *spdlog::default_logger();
  spdlog::level::level_enum console = logger.level();
  for (const spdlog::sink_ptr& existing : logger.sinks()) existing->set_level(std::max(existing->level(), console));
  sink->set_level(rank == 0 ? spdlog::level::debug : spdlog::level::warn);
  if (rank == 0) logger.set_level(std::min(console, spdlog::level::debug));
  logger.sinks().push_back(std::move(sink));
}

}  // namespace hai
