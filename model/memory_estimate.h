#pragma once
// The memory one rank needs for a config and layout, estimated from the model shape without allocating it
// (hai-train --dry-run and the start-up summary), for the implementation as it is: every pipeline rank keeps the
// whole parameter store with its ep-th of the routed experts (stores are not sharded by pipeline stage yet, so pp
// does not divide parameters, gradients or optimizer state), its ZeRO-1 shard of the optimizer state, and the
// activations of the pipeline stage that saves the most (parallel.stage_layers, or the cost model's split).
//   params:      the fp32 master values, whole on every rank (ZeRO-1 shards only the moments, parallel/zero1.h),
//                and the compute copy GEMMs read (the master itself in fp32 mode; bf16 under fp8 but for the
//                fp8_only weights, the routed experts, plus the FP8 copies of the fp8_gemm weights, as stored and
//                transposed with their block scales)
//   grads:       fp32 gradients of the rank's parameters
//   optimizer:   ZeRO-1 shard of the two AdamW moments
//   activations: what forward keeps for backward, for the micro-batches a schedule keeps alive (1 without a
//                pipeline, pp under 1F1B, pp + 1 under DualPipe(V)); counted per layer from the tensors the
//                layers save under train.recompute, in the dtypes the precision keeps them in
//                (layer_saved_bytes_per_token), plus one chunk of the output head's fp32 logits (output_head.h)

#include <cstdint>

#include "framework/config/config.h"

namespace hai {

struct RankMemory {
  int64_t params = 0;
  int64_t grads = 0;
  int64_t optimizer = 0;
  int64_t activations = 0;
  int64_t total() const { return params + grads + optimizer + activations; }
};

// The bytes per token a decoder layer (an MoE layer, else a dense one) keeps from its forward to its backward under
// config.train.recompute and config.precision: DecoderLayer::Context with the contexts inside it, as the layers
// allocate them (measured against them by tests/model/recompute_memory_test.cc; docs/design/recompute.md).
double layer_saved_bytes_per_token(const Config& config, bool moe);

// config must have dp and micro_batches resolved.
RankMemory estimate_rank_memory(const Config& config);

}  // namespace hai
