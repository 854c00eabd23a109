#include "framework/device/cpu/parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "framework/core/error.h"
#include "framework/core/launch.h"

namespace hai::cpu {
namespace {

// Below this many multiply-adds an op runs inline: waking a sleeping thread costs some microseconds.
constexpr int64_t kMinParallelWork = 1 << 16;

// How long an idle thread of the pool polls for the next job (or the caller for its chunks) before sleeping.
constexpr std::chrono::microseconds kSpinTime{200};

int threads_from_environment(const char* value) {
  try {
    size_t used = 0;
    int threads = std::stoi(value, &used);
    if (used == std::string(value).size() && threads >= 1) return threads;
  } catch (const std::exception&) {
  }
  HAI_THROW("HAI_CPU_THREADS must be a positive integer, got '{}'", value);
}

}  // namespace

ThreadPool::ThreadPool(int threads) : active_threads_(std::max(threads, 1)) {
  for (int chunk = 1; chunk < active_threads_.load(); ++chunk) {
    workers_.emplace_back([this, chunk] { worker_loop(chunk); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  job_posted_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::limit_threads(int threads) { active_threads_ = std::clamp(threads, 1, this->threads()); }

std::pair<int64_t, int64_t> ThreadPool::chunk_range(const Job& job, int chunk) {
  return {job.count * chunk / job.chunks, job.count * (chunk + 1) / job.chunks};
}

void ThreadPool::run_chunk(const Job& job, int chunk) {
  auto [begin, end] = chunk_range(job, chunk);
  try {
    (*job.body)(begin, end);
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
}

void ThreadPool::run(int64_t count, const RangeBody& body) {
  if (count <= 0) return;
  int chunks = static_cast<int>(std::min<int64_t>(active_threads_.load(), count));
  bool idle = false;
  if (chunks == 1 || !busy_.compare_exchange_strong(idle, true)) return body(0, count);
  Job job{&body, count, chunks};
  {
    std::lock_guard lock(mutex_);
    job_ = job;
    error_ = nullptr;
    unfinished_chunks_ = chunks - 1;
    ++generation_;
  }
  job_posted_.notify_all();
  run_chunk(job, 0);
  wait_for_chunks();
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    error = error_;
  }
  busy_ = false;
  if (error) std::rethrow_exception(error);
}

void ThreadPool::wait_for_chunks() {
  auto spin_end = std::chrono::steady_clock::now() + kSpinTime;
  while (unfinished_chunks_.load() > 0 && std::chrono::steady_clock::now() < spin_end) std::this_thread::yield();
  std::unique_lock lock(mutex_);
  job_finished_.wait(lock, [this] { return unfinished_chunks_.load() == 0; });
}

void ThreadPool::worker_loop(int chunk) {
  uint64_t seen = 0;
  while (true) {
    auto spin_end = std::chrono::steady_clock::now() + kSpinTime;
    while (generation_.load() == seen && std::chrono::steady_clock::now() < spin_end) std::this_thread::yield();
    std::unique_lock lock(mutex_);
    job_posted_.wait(lock, [&] { return stopping_ || generation_.load() != seen; });
    if (stopping_) return;
    seen = generation_.load();
    Job job = job_;
    lock.unlock();
    if (chunk >= job.chunks) continue;
    run_chunk(job, chunk);
    if (--unfinished_chunks_ == 0) {
      std::lock_guard finished_lock(mutex_);
      job_finished_.notify_one();
    }
  }
}

int default_cpu_threads() {
  if (const char* value = std::getenv("HAI_CPU_THREADS")) return threads_from_environment(value);
  int hardware = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, hardware / std::max(1, launch_info().local_size));
}

ThreadPool& cpu_thread_pool() {
  static ThreadPool pool(default_cpu_threads());
  return pool;
}

void parallel_for(int64_t count, int64_t work_per_item, const RangeBody& body) {
  if (count * work_per_item < kMinParallelWork) return body(0, count);
  cpu_thread_pool().run(count, body);
}

}  // namespace hai::cpu
