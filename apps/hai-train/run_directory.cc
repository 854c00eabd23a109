#include "apps/hai-train/run_directory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "apps/hai-train/user_error.h"
#include "framework/config/write.h"

namespace hai {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxInvocations = 9999;

[[noreturn]] void cannot_write(const fs::path& path, const std::string& what) {
  throw UserError(fmt::format("logging.run_dir: cannot write {}{}: {}", path.string(),
                              relative_path_note(path.string()), what));
}

void make_directories(const fs::path& directory) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) cannot_write(directory, error.message());
}

// Creates configs/NNNN.yaml with the lowest number above every existing one; O_EXCL, so two jobs sharing a run
// directory never write the same file.
std::pair<fs::path, int> create_history_file(const fs::path& directory) {
  int last = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
    std::string name = entry.path().filename().string();
    if (name.size() == 9 && name.ends_with(".yaml") && name.find_first_not_of("0123456789") == 4) {
      last = std::max(last, std::stoi(name.substr(0, 4)));
    }
  }
  for (int number = last + 1; number <= kMaxInvocations; ++number) {
    fs::path path = directory / fmt::format("{:04}.yaml", number);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      return {path, number};
    }
    if (errno != EEXIST) cannot_write(path, std::strerror(errno));
  }
  cannot_write(directory, fmt::format("it already holds {} invocations", kMaxInvocations));
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream stream(path, std::ios::trunc);
  stream << text;
  stream.close();
  if (!stream) cannot_write(path, "write failed");
}

std::string what_it_did(const InvocationRecord& record) {
  std::string start = record.start_step > 0 ? fmt::format("from the checkpoint of step {}", record.start_step)
                                            : std::string("from the initial weights");
  switch (record.kind) {
    case Invocation::train: return "train " + start;
    case Invocation::eval_only: return "--eval-only " + start;
    case Invocation::profile: return "--profile-steps " + start;
  }
  return start;
}

}  // namespace

std::string record_invocation(const Config& config, const InvocationRecord& record) {
  fs::path run_dir = config.logging.run_dir;
  make_directories(run_dir / "configs");
  auto [history, number] = create_history_file(run_dir / "configs");
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::string yaml = config_to_yaml(config);
  std::string header = fmt::format("# hai-train invocation {:04} at {:%Y-%m-%dT%H:%M:%SZ}\n# command: {}\n# {}\n",
                                   number, utc, record.command_line, what_it_did(record));
  write_text(history, header + yaml);
  if (record.kind == Invocation::train) {
    fs::path latest = run_dir / "config.yaml";
    fs::path temporary = latest.string() + ".tmp";
    write_text(temporary, header + yaml);
    std::error_code error;
    fs::rename(temporary, latest, error);
    if (error) cannot_write(latest, error.message());
  }
  return history.string();
}

std::string command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string argument = argv[i];
    bool plain = !argument.empty() && argument.find_first_of(" \t\n'\"\\$`*?;&|<>(){}[]") == std::string::npos;
    if (!line.empty()) line += ' ';
    if (plain) {
      line += argument;
      continue;
    }
    line += '\'';
    for (char c : argument) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

}  // namespace hai
