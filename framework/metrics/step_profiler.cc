#include "framework/metrics/step_profiler.h"

#include <algorithm>
#include <map>

#include "framework/core/error.h"
#include "framework/tensor/device_memory.h"

namespace hai {
namespace {

constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;

// "forward.attention" -> "attention"; a name without a pass is its own kind.
std::string_view kind_of(std::string_view phase) {
  size_t dot = phase.find('.');
  return dot == std::string_view::npos ? phase : phase.substr(dot + 1);
}

double share_of(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

}  // namespace

StepProfiler::StepProfiler(Device device) : device_(device), clock_(device) {}

void StepProfiler::begin_step() {
  HAI_CHECK(step_phases_.empty() && clock_.recorded() == 0, "StepProfiler: begin_step inside a step");
  step_start_ = std::chrono::steady_clock::now();
}

void StepProfiler::mark(std::string_view phase) {
  step_phases_.push_back(phase_index(phase));
  clock_.record();
}

std::string_view StepProfiler::running_phase() const {
  return step_phases_.empty() ? std::string_view() : std::string_view(phases_[step_phases_.back()].name);
}

void StepProfiler::record_memory(std::string_view point, std::string_view kind) {
  size_t live = device_memory_stats(device_).allocated_bytes;
  auto known = std::find_if(memory_.begin(), memory_.end(), [&](const MemoryPoint& p) { return p.name == point; });
  if (known == memory_.end()) {
    memory_.push_back({std::string(point), std::string(kind), live});
  } else {
    known->live_bytes = std::max(known->live_bytes, live);
  }
}

void StepProfiler::end_step() {
  clock_.record();  // the end of the last phase
  std::vector<double> intervals = clock_.intervals_ms();  // [marks]
  HAI_CHECK(intervals.size() == step_phases_.size(), "StepProfiler: {} phases but {} intervals",
            step_phases_.size(), intervals.size());
  for (size_t i = 0; i < intervals.size(); ++i) {
    Phase& phase = phases_[step_phases_[i]];
    phase.total_ms += intervals[i];
    ++phase.calls;
  }
  total_step_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_start_).count();
  ++steps_;
  step_phases_.clear();
  clock_.clear();
}

size_t StepProfiler::phase_index(std::string_view phase) {
  for (size_t i = 0; i < phases_.size(); ++i) {
    if (phases_[i].name == phase) return i;
  }
  phases_.push_back({.name = std::string(phase)});
  return phases_.size() - 1;
}

nlohmann::ordered_json StepProfiler::report() const {
  HAI_CHECK(steps_ > 0, "StepProfiler: no step was profiled");
  double steps = static_cast<double>(steps_);
  double phases_ms = 0;
  for (const Phase& phase : phases_) phases_ms += phase.total_ms / steps;

  nlohmann::ordered_json phases = nlohmann::ordered_json::array();
  std::vector<std::pair<std::string, double>> kinds;  // in first-marked order
  for (const Phase& phase : phases_) {
    double ms = phase.total_ms / steps;
    phases.push_back({{"phase", phase.name},
                      {"ms", ms},
                      {"share", share_of(ms, phases_ms)},
                      {"calls", static_cast<double>(phase.calls) / steps}});
    std::string kind(kind_of(phase.name));
    auto known = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == kind; });
    if (known == kinds.end()) {
      kinds.emplace_back(kind, ms);
    } else {
      known->second += ms;
    }
  }
  nlohmann::ordered_json kind_list = nlohmann::ordered_json::array();
  for (const auto& [kind, ms] : kinds) {
    kind_list.push_back({{"kind", kind}, {"ms", ms}, {"share", share_of(ms, phases_ms)}});
  }

  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  std::map<std::string, std::pair<double, int>> growth_by_kind;  // kind -> (sum of growth in GiB, points)
  size_t previous = memory_.empty() ? 0 : memory_.front().live_bytes;
  for (const MemoryPoint& point : memory_) {
    double growth = (static_cast<double>(point.live_bytes) - static_cast<double>(previous)) / kBytesPerGib;
    points.push_back({{"point", point.name},
                      {"kind", point.kind},
                      {"live_gib", static_cast<double>(point.live_bytes) / kBytesPerGib},
                      {"growth_gib", growth}});
    growth_by_kind[point.kind].first += growth;
    ++growth_by_kind[point.kind].second;
    previous = point.live_bytes;
  }
  nlohmann::ordered_json mean_growth = nlohmann::ordered_json::object();
  for (const auto& [kind, sum] : growth_by_kind) mean_growth[kind] = sum.first / sum.second;

  DeviceMemoryStats stats = device_memory_stats(device_);
  return {{"device", to_string(device_)},
          {"steps", steps_},
          {"step_ms", total_step_ms_ / steps},
          {"phases_ms", phases_ms},
          {"phases", phases},
          {"kinds", kind_list},
          {"memory",
           {{"peak_gib", static_cast<double>(stats.peak_allocated_bytes) / kBytesPerGib},
            {"points", points},
            {"growth_gib_by_kind", mean_growth}}}};
}

}  // namespace hai
