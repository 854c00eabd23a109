#pragma once
// QueuedOperationWatchdog: runtime.collective_timeout_s for operations that run on a GPU stream. An NCCL
// operation returns to the host as soon as it is queued, so the host-side CollectiveWatchdog
// (collective_watchdog.h) never sees it wait. This one records a CUDA event after each queued operation, and a
// thread of its own polls the events and `poll_error` (ncclCommGetAsyncError, say). When an operation has not
// completed `timeout` after it was queued, or poll_error reports an error, it calls `on_hang` once, from its
// thread, and watches no more. The time counts from queueing, so work queued ahead of the operation on its
// stream counts too (the timeout is meant to be far longer than a step).

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "framework/comm/communicator.h"

namespace hai {

class QueuedOperationWatchdog {
 public:
  struct Hang {
    OperationRecord operation;  // the oldest unfinished operation (empty if none was queued)
    double waited_s = 0;        // since it was queued
    std::string error;          // what poll_error or CUDA reported; empty for a timeout
  };
  using ErrorPoll = std::function<std::string()>;  // an empty string: no error
  using HangHandler = std::function<void(const Hang&)>;

  // device: the GPU whose streams are watched; timeout > 0.
  QueuedOperationWatchdog(Device device, std::chrono::milliseconds timeout, ErrorPoll poll_error,
                          HangHandler on_hang);
  // Stops the thread; operations still queued are no longer watched.
  ~QueuedOperationWatchdog();
  QueuedOperationWatchdog(const QueuedOperationWatchdog&) = delete;
  QueuedOperationWatchdog& operator=(const QueuedOperationWatchdog&) = delete;

  // `operation` was just queued on `stream` (of the watched GPU, current on the calling thread).
  void queued(OperationRecord operation, Stream stream);

 private:
  struct Pending {
    OperationRecord operation;
    cudaEvent_t completed;
    std::chrono::steady_clock::time_point queued;
  };

  cudaEvent_t take_event();
  void watch();
  // Drops the completed operations; true (and `hang` filled in) when there is one to report. Under mutex_.
  bool find_hang(std::chrono::steady_clock::time_point now, Hang& hang);

  Device device_;
  std::chrono::milliseconds timeout_;
  ErrorPoll poll_error_;
  HangHandler on_hang_;
  std::mutex mutex_;  // guards pending_, free_events_ and stopping_
  std::condition_variable wake_;
  std::deque<Pending> pending_;  // in queueing order
  std::vector<cudaEvent_t> free_events_;
  bool stopping_ = false;
  std::thread thread_;  // NOTE: last, so that it starts after every member it reads exists
};

}  // namespace hai
