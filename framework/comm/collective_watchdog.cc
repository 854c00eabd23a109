#include "framework/comm/collective_watchdog.h"

#include <algorithm>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "framework/core/error.h"

namespace hai {
namespace {

// How often the thread looks: a tenth of the timeout, between 10 ms and 1 s.
std::chrono::milliseconds poll_interval(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

std::chrono::milliseconds checked_timeout(std::chrono::milliseconds timeout) {
  HAI_CHECK(timeout.count() > 0, "collective watchdog: the timeout must be positive, got {} ms", timeout.count());
  return timeout;
}

}  // namespace

CollectiveWatchdog::CollectiveWatchdog(int rank, std::chrono::milliseconds timeout, int exit_code)
    : rank_(rank), timeout_(checked_timeout(timeout)), exit_code_(exit_code), thread_([this] { watch(); }) {}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CollectiveWatchdog::operation_started(Communicator& communicator, OperationRecord operation) {
  std::lock_guard lock(mutex_);
  in_flight_.push_back({&communicator, operation, std::chrono::steady_clock::now()});
}

void CollectiveWatchdog::operation_finished(Communicator& communicator) {
  std::lock_guard lock(mutex_);
  // NOTE: an operation runs inside no other of the same communicator, so its entry is the latest one of it.
  auto latest = std::find_if(in_flight_.rbegin(), in_flight_.rend(),
                             [&](const InFlight& entry) { return entry.communicator == &communicator; });
  if (latest != in_flight_.rend()) in_flight_.erase(std::next(latest).base());
}

void CollectiveWatchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, poll_interval(timeout_));
    auto now = std::chrono::steady_clock::now();
    for (const InFlight& entry : in_flight_) {
      if (!stopping_ && now - entry.started > timeout_) abort_job(entry, now);
    }
  }
}

void CollectiveWatchdog::abort_job(const InFlight& hung, std::chrono::steady_clock::time_point now) {
  double waited_s = std::chrono::duration<double>(now - hung.started).count();
  spdlog::error("collective timeout: rank {} waited {:.0f}s in {} #{} (rank {} of a communicator of {}; "
                "runtime.collective_timeout_s = {:g}); aborting the job",
                rank_, waited_s, hung.operation.name, hung.operation.sequence, hung.communicator->rank(),
                hung.communicator->size(), std::chrono::duration<double>(timeout_).count());
  spdlog::default_logger()->flush();
  hung.communicator->abort(exit_code_);
  std::abort();  // NOTE: not reached; GCC does not see abort's [[noreturn]] through the virtual call
}

}  // namespace hai
