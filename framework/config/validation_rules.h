#pragma once
// The groups of cross-key rules validate() runs, one file each. Each throws ConfigError on the first problem.

#include "framework/config/config.h"
#include "framework/config/config_error.h"

namespace hai {

// The derived sizes (parameters, tokens per micro-batch and run, activations, logits), computed with overflow checks
// against limits that keep the trainer's and the memory estimate's arithmetic within 64 bits. Needs the per-key
// bounds to hold.
void validate_sizes(const Config& config, const KeyLines& lines);

// Layer counts, head dims, MoE routing shape, RoPE/YaRN, sequence length.
void validate_model(const Config& config, const KeyLines& lines);

// pp x dp x tp = world, ep, head and expert divisibility, layers per stage, global batch, pipeline schedule rules.
void validate_layout(const Config& config, int world_size, const KeyLines& lines);

// Learning-rate schedule, data sources, evaluation, loss scaling.
void validate_training(const Config& config, const KeyLines& lines);

}  // namespace hai
