#pragma once
// Model FLOPs utilisation (docs/architecture.md "Outputs"): achieved model FLOP/s over the peak of all GPUs.
// flops_per_token is the model's training FLOPs per token (model/parameters.h); tokens_per_s counts the whole job's
// tokens.

#include <cstdint>

namespace hai {

// A fraction (0.41 = 41%): tokens_per_s * flops_per_token / (peak_tflops * 1e12 * gpus).
double mfu(double tokens_per_s, double flops_per_token, double peak_tflops, int64_t gpus);

}  // namespace hai
