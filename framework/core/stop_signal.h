#pragma once
// Graceful stop on a signal (runtime.stop_signals): the handler only records which signal came (an atomic); the
// training loop reads it at a step boundary, the ranks agree on it (a max over the ranks), save a checkpoint and
// exit. A second stop signal restores the signal's default action and raises it again: the process ends at once.

#include <signal.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hai {

// The number of a signal that may stop training ("SIGTERM" or "TERM"; SIGINT, SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT,
// SIGXCPU); nullopt for any other name.
std::optional<int> stop_signal_number(std::string_view name);
// "SIGTERM" for 15, "signal N" for others.
std::string signal_name(int signal);

// Installs the handlers of `names` (each accepted by stop_signal_number) for its lifetime; restores the previous
// handlers when destroyed. At most one StopSignals may exist at a time.
class StopSignals {
 public:
  explicit StopSignals(const std::vector<std::string>& names);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first stop signal received since installation; 0 if none.
  int received() const;

 private:
  std::vector<int> signals_;
  std::vector<struct sigaction> previous_;  // [signals_]
};

}  // namespace hai
