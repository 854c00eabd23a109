#include "framework/core/stop_signal.h"

#include <atomic>
#include <cstring>

#include "framework/core/error.h"

namespace hai {
namespace {

struct NamedSignal {
  std::string_view name;
  int number;
};

constexpr NamedSignal kStopSignals[] = {{"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},   {"SIGUSR1", SIGUSR1},
                                        {"SIGUSR2", SIGUSR2}, {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT},
                                        {"SIGXCPU", SIGXCPU}};

// NOTE: a signal handler can reach only static state; a lock-free atomic is async-signal-safe.
std::atomic<int> received_signal{0};
std::atomic<bool> installed{false};
static_assert(std::atomic<int>::is_always_lock_free);

void on_stop_signal(int signal) {
  int expected = 0;
  if (received_signal.compare_exchange_strong(expected, signal)) return;
  // The second stop signal: abort at once, with the signal's own default action (its exit status).
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

}  // namespace

std::optional<int> stop_signal_number(std::string_view name) {
  for (const NamedSignal& known : kStopSignals) {
    if (name == known.name || name == known.name.substr(3)) return known.number;
  }
  return std::nullopt;
}

std::string signal_name(int signal) {
  for (const NamedSignal& known : kStopSignals) {
    if (signal == known.number) return std::string(known.name);
  }
  return fmt::format("signal {}", signal);
}

StopSignals::StopSignals(const std::vector<std::string>& names) {
  HAI_CHECK(!installed.exchange(true), "stop-signal handlers are already installed");
  received_signal = 0;
  for (const std::string& name : names) {
    std::optional<int> number = stop_signal_number(name);
    HAI_CHECK(number.has_value(), "'{}' is not a stop signal", name);
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // NOTE: system calls (file writes, MPI's polls) go on; the loop polls the flag
    struct sigaction previous {};
    if (::sigaction(*number, &action, &previous) != 0) {
      HAI_THROW("cannot install the handler of {}: {}", name, std::strerror(errno));
    }
    signals_.push_back(*number);
    previous_.push_back(previous);
  }
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < signals_.size(); ++i) ::sigaction(signals_[i], &previous_[i], nullptr);
  installed = false;
}

int StopSignals::received() const { return received_signal.load(); }

}  // namespace hai
