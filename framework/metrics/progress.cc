#include "framework/metrics/progress.h"

#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "framework/core/error.h"

namespace hai {
namespace {

// 950 -> "950", 12345 -> "12.3k", 4.5e6 -> "4.50M".
std::string format_rate(double value) {
  if (value < 1e3) return fmt::format("{:.0f}", value);
  if (value < 1e6) return fmt::format("{:.1f}k", value / 1e3);
  return fmt::format("{:.2f}M", value / 1e6);
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto total = static_cast<int64_t>(std::llround(seconds));
  int64_t hours = total / 3600, minutes = total / 60 % 60, rest = total % 60;
  if (hours > 0) return fmt::format("{}h{:02}m{:02}s", hours, minutes, rest);
  if (minutes > 0) return fmt::format("{}m{:02}s", minutes, rest);
  return fmt::format("{}s", rest);
}

std::string format_progress(const ProgressLine& line) {
  return fmt::format(
      "step {}/{} | loss {:.4f} | lr {:.2e} | grad norm {:.3f} | {} tok/s | MFU {} | {:.1f} ms/step | "
      "mem {:.2f} GiB | ETA {}",
      line.step, line.total_steps, line.loss, line.lr, line.grad_norm, format_rate(line.tokens_per_s),
      std::isfinite(line.mfu) ? fmt::format("{:.1f}%", 100.0 * line.mfu) : std::string("n/a"), line.step_ms,
      line.mem_gib, format_duration(line.eta_s));
}

StepTimeAverage::StepTimeAverage(double smoothing) : smoothing_(smoothing) {
  HAI_CHECK(smoothing > 0.0 && smoothing <= 1.0, "step time smoothing must be in (0, 1], got {}", smoothing);
}

void StepTimeAverage::add(double step_ms) {
  average_ms_ = average_ms_ ? *average_ms_ + smoothing_ * (step_ms - *average_ms_) : step_ms;
}

double StepTimeAverage::step_ms() const {
  return average_ms_.value_or(std::numeric_limits<double>::quiet_NaN());
}

double StepTimeAverage::eta_s(int64_t remaining_steps) const {
  return step_ms() * static_cast<double>(remaining_steps) / 1e3;
}

StepClock::StepClock(Now now) : now_(std::move(now)), mark_(now_()) {}

void StepClock::restart() { mark_ = now_(); }

double StepClock::lap_ms() {
  std::chrono::steady_clock::time_point now = now_();
  double elapsed = std::chrono::duration<double, std::milli>(now - mark_).count();
  mark_ = now;
  return elapsed;
}

}  // namespace hai
