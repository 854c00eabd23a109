#pragma once
// The memory one rank needs for a config and layout, estimated from the model shape without allocating it
// (hai-train --dry-run and the start-up summary), for the implementation as it is: each pipeline rank keeps the
// parameters of its share (model/rank_share.h: the stages of its chunks, its ep-th of their routed experts), its
// ZeRO-1 shard of their optimizer state, and the activations of its stages. Pipeline ranks differ (the first holds
// the embedding, the last the head and MTP; DualPipe puts both on rank 0); the ranks of one pipeline rank's DP
// group hold the same amounts (EP ranks hold equal shares of the experts).
//   params:      the fp32 master values the store holds whole (all of them in fp32 mode, where they are the compute
//                copy; in mixed precision those ZeRO-1 does not shard: the ones the model reads in fp32, the
//                routing biases, those of groups of one rank: parallel/zero1.h), and the compute
//                copy GEMMs read (bf16 under fp8 but for the fp8_only weights, the routed experts, plus the FP8
//                copies of the fp8_gemm weights, as stored and transposed with their block scales)
//   grads:       fp32 gradients of the rank's parameters
//   optimizer:   ZeRO-1 shard of the two AdamW moments and of the sharded fp32 masters (dense over dp, experts
//                over expert-dp)
//   activations: what forward keeps for backward, counted per layer from the tensors the layers save under
//                train.recompute, in the dtypes the precision keeps them in (layer_saved_bytes_per_token), summed
//                over the (stage, micro-batch) forwards alive at the rank's peak as its program runs
//                (model/schedule_memory.h), plus one chunk of the output head's fp32 logits (output_head.h); under
//                tensor parallelism a rank's heads and FFN columns and its vocabulary rows of the logits (every tp
//                rank keeps all its tokens: no sequence parallelism)
//   backward:    the backward temporaries at that peak: what the running backward of one layer holds beside the
//                saved activations (layer_backward_bytes_per_token) for its stage's heaviest layer, and under
//                train.recompute the tensors that layer's backward remakes
//   pipeline_buffers: the [T, H] fp32 tensors between stages the pipeline engine holds at that peak (outputs and
//                input gradients until used or sent; posted sends until seen complete: schedule_memory.h)

#include <cstdint>
#include <utility>
#include <vector>

#include "framework/config/config.h"

namespace hai {

struct RankMemory {
  int64_t params = 0;
  int64_t grads = 0;
  int64_t optimizer = 0;
  int64_t activations = 0;
  int64_t backward = 0;          // backward temporaries
  int64_t pipeline_buffers = 0;  // stage-boundary tensors
  int64_t total() const { return params + grads + optimizer + activations + backward + pipeline_buffers; }
};

// The bytes per token a decoder layer (an MoE layer, else a dense one) keeps from its forward to its backward under
// config.train.recompute and config.precision: DecoderLayer::Context with the contexts inside it, as the layers
// allocate them (measured against them by tests/model/recompute_memory_test.cc; docs/design/recompute.md).
double layer_saved_bytes_per_token(const Config& config, bool moe);

// Of that, MLA's Context (recompute none or selective).
double attention_saved_bytes_per_token(const Config& config);

enum class LayerKind { dense, moe, mtp };
// The bytes per token one layer's backward holds at its peak beyond what its forward saved (B then W, as
// PipelineStage::backward runs them): the output gradient it reads and the input gradient it writes (with its bf16
// rounding in bf16), the residual and norm input gradients, the output gradients its projections keep for the
// weight gradient, and the larger of the MLP's backward scratch (gate/up and activation gradients; the routed
// experts' sorted rows, K per token) and the attention's (d_o, d_q, d_kv, d_k_rope per head; on CPU ranks the
// reference kernel's scratch). An MTP module adds its block's output and projection gradients. Without what
// recomputation remakes (the rank's plan adds that: layer_saved_bytes_per_token under none less under the mode).
// Measured against the layers by tests/model/recompute_memory_test.cc; for an FP8 MoE layer a lower bound.
double layer_backward_bytes_per_token(const Config& config, LayerKind kind);

// One pipeline rank's memory, with what it holds.
struct PipelineRankMemory {
  int pipeline_rank = 0;
  std::vector<int> stages;  // the stages of its chunks
  std::vector<std::pair<int64_t, int64_t>> layers;  // each stage's decoder layers, first and last
  bool embedding = false, head = false;     // whether it holds the embedding, the final norm + head + MTP
  int64_t parameters = 0;  // elements held
  RankMemory memory;
};

// The most (stage, micro-batch) activations each pipeline rank holds at once, by pipeline rank, as the schedule
// simulator counts them (parallel/pipeline/simulator.h) for the configured schedule and micro-batches: under 1F1B
// rank r holds pp - r, under DualPipe pp + 1, under DualPipeV (2 pp stages of half the layers) 2 pp + 1; {1} without
// a pipeline. config must have micro_batches resolved.
std::vector<int64_t> live_micro_batches(const Config& config);
// Every pipeline rank's memory, by pipeline rank. config must have dp and micro_batches resolved.
std::vector<PipelineRankMemory> estimate_pipeline_memory(const Config& config);
// The largest of them (by total): what every rank must have.
RankMemory estimate_rank_memory(const Config& config);
// Whether `memory` fits a device of `device_memory_gib` GiB.
bool fits_device(const RankMemory& memory, double device_memory_gib);

}  // namespace hai
