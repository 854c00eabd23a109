#pragma once
// A job started in the background from a test (hai-train alone or under mpirun), to be sent signals while it runs:
// its launcher's pid, the pids of its hai-train processes by rank, its progress (steps in metrics.jsonl) and its
// exit status.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "tests/apps/faults/fault_tools.h"

namespace hai::testing {

class BackgroundJob {
 public:
  // Starts `command` (its first word the launcher: mpirun or hai-train) in `dir`.
  BackgroundJob(const std::string& command, const std::filesystem::path& dir) : dir_(dir) {
    std::string line = "cd '" + dir.string() + "' && export HAI_CPU_THREADS=1 && (" + command +
                       " >job.out 2>job.err & echo $! >job.pid; wait $!; echo $? >job.status.tmp; "
                       "mv job.status.tmp job.status) >/dev/null 2>&1 &";
    EXPECT_EQ(std::system(line.c_str()), 0);
    pid_ = static_cast<pid_t>(std::stol(wait_for_file("job.pid")));
  }

  pid_t pid() const { return pid_; }

  // The pid of the hai-train process of rank `rank` (its environment's OMPI_COMM_WORLD_RANK; alone: rank 0).
  pid_t rank_pid(int rank) const {
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      if (file_text(entry.path() / "comm").rfind("hai-train", 0) != 0) continue;
      pid_t pid = std::stoi(name);
      if (pid != pid_ && !descends_from(pid)) continue;
      std::string environment = file_text(entry.path() / "environ");
      std::string key = std::string("OMPI_COMM_WORLD_RANK=") + std::to_string(rank) + '\0';
      bool alone = environment.find("OMPI_COMM_WORLD_RANK=") == std::string::npos;
      if ((alone && rank == 0) || environment.find(key) != std::string::npos) return pid;
    }
    return 0;
  }

  // Waits until metrics.jsonl of the run dir has `steps` step records.
  void wait_for_steps(int steps, const std::filesystem::path& run_dir) const {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline && !finished()) {
      std::ifstream metrics(run_dir / "metrics.jsonl");
      int lines = 0;
      for (std::string line; std::getline(metrics, line);) lines += line.find("\"loss\"") != std::string::npos;
      if (lines >= steps) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ADD_FAILURE() << "the job did not reach step " << steps << ":\n" << file_text(dir_ / "job.err");
  }

  bool finished() const { return std::filesystem::exists(dir_ / "job.status"); }

  // The launcher's exit status (the shell's: 128 + N for a death by signal N).
  int wait() const { return std::stoi(wait_for_file("job.status")); }

  std::string err() const { return file_text(dir_ / "job.err"); }

 private:
  std::string wait_for_file(const std::string& name) const {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
    while (std::chrono::steady_clock::now() < deadline) {
      std::string text = file_text(dir_ / name);
      if (!text.empty()) return text;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ADD_FAILURE() << name << " never appeared";
    return "-1";
  }

  bool descends_from(pid_t pid) const {
    for (int depth = 0; depth < 8 && pid > 1; ++depth) {
      std::istringstream stat(file_text("/proc/" + std::to_string(pid) + "/stat"));
      std::string skip;
      pid_t parent = 0;
      stat >> skip >> skip >> skip >> parent;  // NOTE: comm has no spaces for these processes
      if (parent == pid_) return true;
      pid = parent;
    }
    return false;
  }

  std::filesystem::path dir_;
  pid_t pid_ = 0;
};

}  // namespace hai::testing
