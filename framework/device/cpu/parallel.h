#pragma once
// A small thread pool for the CPU backend's big ops, and parallel_for over it.
//
// Determinism: parallel_for splits [0, count) into contiguous chunks, one per thread, and each op computes every
// output item (a row of C, an attention head, a token...) entirely inside one body call, in the same order of
// operations whatever chunk it falls in. So an op's result is bit-identical for every thread count; only which
// thread writes a row changes.
//
// Thread count: HAI_CPU_THREADS when set (>= 1), else the hardware concurrency divided by the ranks on this node
// (launch_info().local_size), at least 1. Multi-rank CPU runs started by mpirun/srun thus share the cores instead
// of oversubscribing them; set HAI_CPU_THREADS=1 when a launcher does not export its local rank count.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hai::cpu {

// body(begin, end) handles items [begin, end).
using RangeBody = std::function<void(int64_t begin, int64_t end)>;

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // the calling thread is one of the `threads`
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Uses at most `threads` of the pool's threads from now on (clamped to [1, threads()]); for tests and tuning.
  void limit_threads(int threads);
  int active_threads() const { return active_threads_.load(); }

  // Runs body over [0, count) split into active_threads() contiguous chunks (fewer when count is smaller) and
  // returns when all are done; rethrows the first exception a chunk threw. A call made while the pool is busy
  // (from a chunk, or from another thread) runs body(0, count) on its caller.
  void run(int64_t count, const RangeBody& body);

 private:
  struct Job {
    const RangeBody* body = nullptr;
    int64_t count = 0;
    int chunks = 0;
  };

  static std::pair<int64_t, int64_t> chunk_range(const Job& job, int chunk);
  void run_chunk(const Job& job, int chunk);
  void wait_for_chunks();
  void worker_loop(int chunk);

  std::vector<std::thread> workers_;  // worker i runs chunk i + 1; the caller runs chunk 0
  std::atomic<int> active_threads_;
  std::atomic<bool> busy_{false};
  // NOTE: a training step runs hundreds of ops of a few hundred microseconds each, so a worker spins (yielding)
  // for a while before it sleeps on job_posted_, and the caller likewise before it sleeps on job_finished_:
  // a sleeping thread takes tens of microseconds to wake.
  std::atomic<uint64_t> generation_{0};     // bumped once per posted job, under mutex_
  std::atomic<int> unfinished_chunks_{0};   // chunks of the current job still running on workers
  std::mutex mutex_;
  std::condition_variable job_posted_;
  std::condition_variable job_finished_;
  Job job_;                   // guarded by mutex_
  std::exception_ptr error_;  // guarded by mutex_
  bool stopping_ = false;     // guarded by mutex_
};

// The thread count described above (reads the environment).
int default_cpu_threads();

// The process's pool, created on first use with default_cpu_threads() threads.
// NOTE: a function-local static, the CPU backend's only mutable global state; its destructor joins the workers.
ThreadPool& cpu_thread_pool();

// Runs body over [0, count) on cpu_thread_pool() when count * work_per_item (roughly the multiply-adds of one
// item) is large enough to pay for waking the threads, else inline on the caller.
void parallel_for(int64_t count, int64_t work_per_item, const RangeBody& body);

}  // namespace hai::cpu
