// The GPU-side watchdog alone, on one GPU: a stream held back by a host function that waits for the test stands
// for a collective that never completes.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <thread>

#include "framework/comm/cuda/queued_operation_watchdog.h"
#include "framework/core/check.h"
#include "tests/framework/device/cuda/parity.h"

namespace hai {
namespace {

using std::chrono::milliseconds;

// Holds a stream back until release() (or destruction).
class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream) {
    HAI_CUDA_CHECK(cudaLaunchHostFunc(stream, &StreamGate::wait, &open_));
  }
  ~StreamGate() { release(); }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void release() { open_.store(true); }

 private:
  static void wait(void* open) {
    while (!static_cast<std::atomic<bool>*>(open)->load()) std::this_thread::sleep_for(milliseconds(1));
  }
  std::atomic<bool> open_{false};
};

// The watchdog under test, reporting its hang to a future.
struct WatchedGpu {
  explicit WatchedGpu(milliseconds timeout,
                      QueuedOperationWatchdog::ErrorPoll poll_error = [] { return std::string(); })
      : watchdog(Device::cuda(0), timeout, std::move(poll_error),
                 [this](const QueuedOperationWatchdog::Hang& hang) { reported.set_value(hang); }) {}

  std::promise<QueuedOperationWatchdog::Hang> reported;
  std::future<QueuedOperationWatchdog::Hang> report = reported.get_future();
  QueuedOperationWatchdog watchdog;  // NOTE: last: its thread reports into the promise above
};

TEST(QueuedOperationWatchdog, ReportsTheOldestOperationStillQueuedAfterTheTimeout) {
  HAI_REQUIRE_CUDA_DEVICE();
  HAI_CUDA_CHECK(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  HAI_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    WatchedGpu gpu(milliseconds(200));
    gpu.watchdog.queued({"broadcast", 6}, Stream{stream});  // completes at once
    HAI_CUDA_CHECK(cudaStreamSynchronize(stream));
    StreamGate gate(stream);
    gpu.watchdog.queued({"all_reduce", 7}, Stream{stream});
    gpu.watchdog.queued({"all_gather", 8}, Stream{stream});
    ASSERT_EQ(gpu.report.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    QueuedOperationWatchdog::Hang hang = gpu.report.get();
    EXPECT_EQ(hang.operation.name, "all_reduce");
    EXPECT_EQ(hang.operation.sequence, 7u);
    EXPECT_GE(hang.waited_s, 0.2);
    EXPECT_EQ(hang.error, "");
  }
  HAI_CUDA_CHECK(cudaStreamSynchronize(stream));
  HAI_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST(QueuedOperationWatchdog, ReportsAnAsynchronousErrorAtOnce) {
  HAI_REQUIRE_CUDA_DEVICE();
  HAI_CUDA_CHECK(cudaSetDevice(0));
  WatchedGpu gpu(std::chrono::hours(1), [] { return std::string("remote process exited"); });
  gpu.watchdog.queued({"all_to_all_v", 12}, Stream{});
  ASSERT_EQ(gpu.report.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  QueuedOperationWatchdog::Hang hang = gpu.report.get();
  EXPECT_EQ(hang.error, "remote process exited");
  HAI_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(QueuedOperationWatchdog, CompletedOperationsAreNotReported) {
  HAI_REQUIRE_CUDA_DEVICE();
  HAI_CUDA_CHECK(cudaSetDevice(0));
  WatchedGpu gpu(milliseconds(50));
  for (uint64_t sequence = 1; sequence <= 100; ++sequence) gpu.watchdog.queued({"send", sequence}, Stream{});
  HAI_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(gpu.report.wait_for(milliseconds(500)), std::future_status::timeout);
}

}  // namespace
}  // namespace hai
