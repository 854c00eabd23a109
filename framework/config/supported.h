#pragma once
// The one list of config features that parse and validate but do not exist yet (empty now: every one runs). A
// feature that lands unfinished adds its line to check_supported(), and deletes it when it is done.

#include "framework/config/config.h"
#include "framework/config/config_error.h"

namespace hai {

// Throws ConfigError(key, "not supported yet (...)") for the first feature in use that is not implemented.
// Expects a config with dp and micro_batches resolved (resolve_auto).
void check_supported(const Config& config, const KeyLines& lines = {});

}  // namespace hai
