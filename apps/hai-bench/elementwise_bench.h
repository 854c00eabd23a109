#pragma once
// Memory-bound op benchmarks at a model's shapes (T tokens): the RMSNorm forwards of the decoder (hidden, and MLA's
// q and kv latents), the bf16 rotary embeddings of MLA's q and kv_a output, MLA's column moves
// (framework/device/column_copy.h) and the fused cross-entropy of one head chunk. Each reports the time per call
// and the bandwidth reached on the bytes the op must move (each input read once, each output written once).

#include <nlohmann/json.hpp>

#include "apps/hai-bench/gpu_timer.h"
#include "framework/config/config.h"

namespace hai::bench {

// {tokens, rmsnorm: [{op, shape, out, ms, gbps}], rope: [{name, shape, offset, ms, gbps}],
//  column_copy: [{name, dst, src, ms, gbps}], cross_entropy: {rows, classes, loss_and_grad: {ms, gbps},
//  forward: {ms, gbps}}}
nlohmann::json benchmark_elementwise(const ModelConfig& model, int64_t tokens, const TimingOptions& timing);

}  // namespace hai::bench
