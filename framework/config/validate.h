#pragma once
// Validation of a parsed Config against the job's world size, before any communicator or allocation. The first
// problem found is thrown as a ConfigError naming the key, with its YAML line when `lines` has it.

#include <cstdint>

#include "framework/config/config.h"
#include "framework/config/config_error.h"

namespace hai {

// Per-key rules of the schema, then model shape, parallel layout and batch, optimizer, data and precision rules.
void validate(const Config& config, int world_size, const KeyLines& lines = {});

// parallel.dp: auto -> world / (pp * tp); parallel.micro_batches: auto -> global / (micro_batch_size * dp).
// Explicit values are returned as they are. Call after validate (which guarantees the divisions are exact).
std::int64_t resolved_dp(const Config& config, int world_size);
std::int64_t resolved_micro_batches(const Config& config, int world_size);

// The config with both autos replaced by their values: what the effective config records.
Config resolve_auto(const Config& config, int world_size);

}  // namespace hai
