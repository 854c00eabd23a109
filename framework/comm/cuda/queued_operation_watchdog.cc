#include "framework/comm/cuda/queued_operation_watchdog.h"

#include <algorithm>
#include <utility>

#include "framework/core/check.h"

namespace hai {
namespace {

// How often the thread looks: a tenth of the timeout, between 10 ms and 1 s.
std::chrono::milliseconds poll_interval(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

std::chrono::milliseconds checked_timeout(std::chrono::milliseconds timeout) {
  HAI_CHECK(timeout.count() > 0, "GPU collective watchdog: the timeout must be positive, got {} ms",
            timeout.count());
  return timeout;
}

double seconds_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

QueuedOperationWatchdog::QueuedOperationWatchdog(Device device, std::chrono::milliseconds timeout,
                                                 ErrorPoll poll_error, HangHandler on_hang)
    : device_(device),
      timeout_(checked_timeout(timeout)),
      poll_error_(std::move(poll_error)),
      on_hang_(std::move(on_hang)),
      thread_([this] { watch(); }) {}

QueuedOperationWatchdog::~QueuedOperationWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // NOTE: not checked: a destructor must not throw. An event still pending is released once it completes.
  for (const Pending& pending : pending_) cudaEventDestroy(pending.completed);
  for (cudaEvent_t event : free_events_) cudaEventDestroy(event);
}

void QueuedOperationWatchdog::queued(OperationRecord operation, Stream stream) {
  cudaEvent_t event = take_event();
  HAI_CUDA_CHECK(cudaEventRecord(event, static_cast<cudaStream_t>(stream.handle)));
  std::lock_guard lock(mutex_);
  pending_.push_back({operation, event, std::chrono::steady_clock::now()});
}

cudaEvent_t QueuedOperationWatchdog::take_event() {
  {
    std::lock_guard lock(mutex_);
    if (!free_events_.empty()) {
      cudaEvent_t event = free_events_.back();
      free_events_.pop_back();
      return event;
    }
  }
  cudaEvent_t event = nullptr;
  HAI_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

void QueuedOperationWatchdog::watch() {
  // NOTE: the events belong to device_; CUDA calls on this thread must see it current. Failing here leaves the
  // queries below to report the error.
  cudaSetDevice(device_.index);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, poll_interval(timeout_));
    Hang hang;
    if (stopping_ || !find_hang(std::chrono::steady_clock::now(), hang)) continue;
    lock.unlock();
    on_hang_(hang);
    return;
  }
}

bool QueuedOperationWatchdog::find_hang(std::chrono::steady_clock::time_point now, Hang& hang) {
  while (!pending_.empty()) {
    const Pending& oldest = pending_.front();
    cudaError_t status = cudaEventQuery(oldest.completed);
    if (status == cudaSuccess) {
      free_events_.push_back(oldest.completed);
      pending_.pop_front();
      continue;
    }
    if (status != cudaErrorNotReady) {
      hang = {oldest.operation, seconds_between(oldest.queued, now),
              fmt::format("CUDA error {}: {}", cudaGetErrorName(status), cudaGetErrorString(status))};
      return true;
    }
    break;
  }
  // NOTE: operations on several streams may finish out of order; a later one finished is dropped when it
  // becomes the oldest, and only the oldest can be the first to time out.
  std::string error = poll_error_();
  if (pending_.empty()) {
    hang = {{}, 0.0, error};
    return !error.empty();
  }
  const Pending& oldest = pending_.front();
  hang = {oldest.operation, seconds_between(oldest.queued, now), error};
  return !error.empty() || now - oldest.queued > timeout_;
}

}  // namespace hai
