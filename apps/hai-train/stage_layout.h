#pragma once
// The decoder layers of each pipeline stage and the pipeline ranks that run it, for hai-train --schedule-only and
// the start-up log, e.g. for pp 2 under 1f1b with parallel.stage_layers [1, 3]:
//   pipeline stages: 2, layers per stage [1, 3] (parallel.stage_layers)
//   stage 0: layers 0..0 with the embedding, on rank 0
//   stage 1: layers 1..3 with the final norm, head and MTP, on rank 1

#include <string>
#include <vector>

#include "framework/config/config.h"

namespace hai {

// Expects a validated config with parallel.micro_batches resolved. One line per entry, without '\n'.
std::vector<std::string> stage_layout_lines(const Config& config);

}  // namespace hai
