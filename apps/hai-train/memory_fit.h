#pragma once
// Before anything is allocated, the plan must fit: the per-rank memory estimate (hai-train --dry-run,
// model/memory_estimate.h) against the memory the rank has: the GPU's for a rank on a GPU, else the host's (its
// physical memory, or the address-space or data-segment limit, ulimit -v / -d, where lower).

#include "framework/config/config.h"
#include "framework/tensor/tensor.h"

namespace hai {

// Returns `config` unchanged; throws ConfigError (key "memory") when the plan needs more than `device` has.
const Config& plan_that_fits(const Config& config, Device device);

}  // namespace hai
