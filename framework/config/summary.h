#pragma once
// A few lines describing a resolved config for the start-up log: model shape, layout, batch, precision, data.

#include <string>

#include "framework/config/config.h"

namespace hai {

// Expects dp and micro_batches resolved (resolve_auto). Lines end with '\n'.
std::string config_summary(const Config& config);

}  // namespace hai
