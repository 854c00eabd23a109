#pragma once
// Causal attention benchmark (framework/device/attention.h) with BF16 q, k, v.

#include <nlohmann/json.hpp>

#include "apps/hai-bench/gpu_timer.h"

namespace hai::bench {

struct AttentionShape {
  int64_t batch = 4;
  int64_t sequence = 2048;
  int64_t heads = 16;
  int64_t qk_head_dim = 192;
  int64_t v_head_dim = 128;
};

// {shape..., forward: {ms, tflops}, backward: {ms, tflops}}. FLOPs count the causal half of the score matrix:
// forward 2 B H (S (S + 1) / 2) (d_qk + d_v), backward twice that (the model FLOPs of docs/architecture.md's MFU,
// without the recomputed scores).
nlohmann::json benchmark_attention(const AttentionShape& shape, const TimingOptions& timing);

}  // namespace hai::bench
