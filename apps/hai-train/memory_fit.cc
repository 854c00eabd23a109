#include "apps/hai-train/memory_fit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "framework/config/config_error.h"
#include "framework/tensor/device_memory.h"
#include "model/memory_estimate.h"

namespace hai {
namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

uint64_t soft_limit(int resource) {
  rlimit limit{};
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::numeric_limits<uint64_t>::max();
  return limit.rlim_cur;
}

// What a process on the host may allocate: the physical memory, or a lower address-space or data limit.
uint64_t host_capacity() {
  auto pages = static_cast<uint64_t>(std::max<long>(sysconf(_SC_PHYS_PAGES), 0));
  auto page_bytes = static_cast<uint64_t>(std::max<long>(sysconf(_SC_PAGESIZE), 0));
  return std::min({pages * page_bytes, soft_limit(RLIMIT_AS), soft_limit(RLIMIT_DATA)});
}

}  // namespace

const Config& plan_that_fits(const Config& config, Device device) {
  int64_t planned = estimate_rank_memory(config).total();
  uint64_t capacity = device.is_cuda() ? device_total_memory(device) : host_capacity();
  auto budget = static_cast<uint64_t>(config.runtime.device_memory_gib * kGib);
  bool by_budget = device.is_cuda() && budget < capacity;  // a GPU is held to runtime.device_memory_gib
  if (by_budget) capacity = budget;
  if (planned >= 0 && static_cast<uint64_t>(planned) <= capacity) return config;
  std::string holder = by_budget ? "runtime.device_memory_gib allows"
                       : device.is_cuda() ? to_string(device) + " has"
                                          : std::string("the host has");
  throw ConfigError("memory",
                    fmt::format("the plan needs {:.2f} GiB per rank (hai-train --dry-run), but {} {:.2f} GiB: make "
                                "the model or micro_batch_size smaller, or use more ranks",
                                static_cast<double>(planned) / kGib, holder, static_cast<double>(capacity) / kGib));
}

}  // namespace hai
