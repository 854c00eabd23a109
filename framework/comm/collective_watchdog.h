#pragma once
// CollectiveWatchdog: ends the job when an operation of a communicator waits too long (runtime.collective_timeout_s,
// docs/architecture.md "Parallel layout"). Installed as the observer of the world communicator
// (Communicator::set_observer), it sees every operation of the world and of every communicator split from it, each with
// its sequence number. A thread of its own checks the operations in flight; one that has run longer than the timeout is
// logged as
//   collective timeout: rank R waited Ns in <operation> #<sequence> (...)
// and the job is aborted through that operation's communicator (MPI_Abort ends every rank of the job, so every
// rank exits non-zero within about the timeout, even those not yet waiting). The abort is called from the
// watchdog's thread while the hung operation blocks the communicator's thread (MPI_Abort allows it).

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "framework/comm/communicator.h"

namespace hai {

class CollectiveWatchdog final : public OperationObserver {
 public:
  // rank: this process's rank in the job, for the log line; timeout > 0; exit_code: the aborted job's exit status.
  CollectiveWatchdog(int rank, std::chrono::milliseconds timeout, int exit_code);
  // Stops the thread; operations still in flight are no longer watched.
  ~CollectiveWatchdog() override;
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  void operation_started(Communicator& communicator, OperationRecord operation) override;
  void operation_finished(Communicator& communicator) override;

 private:
  struct InFlight {
    Communicator* communicator;
    OperationRecord operation;
    std::chrono::steady_clock::time_point started;
  };

  void watch();
  [[noreturn]] void abort_job(const InFlight& hung, std::chrono::steady_clock::time_point now);

  int rank_;
  std::chrono::milliseconds timeout_;
  int exit_code_;
  std::mutex mutex_;  // guards in_flight_ and stopping_
  std::condition_variable wake_;
  std::vector<InFlight> in_flight_;
  bool stopping_ = false;
  std::thread thread_;  // NOTE: last, so that it starts after every member it reads exists
};

}  // namespace hai
