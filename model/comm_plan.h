#pragma once
// The communication of one optimizer step, per pipeline rank, planned from the config without running it
// (hai-train --dry-run; docs/scale.md): the bytes a rank sends through each parallel group, the link they cross,
// the time that takes at the configured bandwidths, and the part the compute beside it would not hide.
//
// Bytes are what one rank sends per step (it receives as much: balanced routing, symmetric collectives), as the
// implementation moves them but for the expert exchange, counted in DeepSeek-V3's wire formats (issue 34's
// dispatcher sends the input gradients back in fp32: parallel/token_dispatcher.h):
//   dp, expert_dp: ZeRO-1 with the fp32 master sharded: a ring reduce-scatter of the fp32 gradients and a ring
//                  all-gather of the updated weights (the 16-bit compute copy; the fp32 values in fp32 training
//                  and, under fp8, of the fp8_only weights, the FP8 GEMMs', which have no 16-bit copy: the store
//                  quantises its FP8 copies from them), (n - 1) / n of the payload each, over
//                  the DP group for the dense parameters and the expert-DP group for the routed experts.
//   ep:            per MoE block (decoder layer or MTP module) and micro-batch, of the T x K routed rows of [H] the
//                  rank makes, the (ep - 1) / ep that belong to other EP ranks (expected under balanced routing):
//                  forward dispatch (e4m3 with a 1x128 fp32 scale under precision.mode fp8, else the compute dtype),
//                  forward combine, and in backward the output gradients out and the input gradients back
//                  (bf16; fp32 in fp32 training). Rows to the EP ranks of the rank's node cross NVLink, the others
//                  InfiniBand.
//   pp:            every send of the rank's pipeline program (parallel/pipeline/schedule.h; DualPipe's two
//                  directions included): the [T, H] fp32 hidden state forward, its gradient backward.
//   pp_replicas:   the ring all-reduce of the fp32 gradients of the parameters several pipeline ranks hold
//                  (every stage under DualPipe; model/rank_share.h), 2 (n - 1) / n of them, after the schedule.
//   tp:            the tp group's collectives per micro-batch (docs/design/tensor-parallel.md), as one rank sends
//                  them: 2 (n - 1) / n of an all-reduce's payload, (n - 1) / n of an all-gather's or
//                  reduce-scatter's [T, ...] one. Without sequence parallelism fp32 all-reduces: forward the
//                  embedding's [T, H], per block MLA's [T, H] and the FFN's or shared expert's [T, H], per head use
//                  d(normed) [T, H] and the loss's [T] max and [3, T] sums; backward per block MLA's latent
//                  gradients [T, q_lora + kv_lora + d_rope] and the FFN's [T, H]. With it the all-reduces of [T, H]
//                  become reduce-scatters (fp32), and the regions' inputs are all-gathered (in bf16 under bf16,
//                  else fp32): forward per block the normed latents and k_rope [T, q_lora + kv_lora + d_rope],
//                  the FFN's x [T, H] and the router's scores and choices [T, E + K] (fp32, i32), per head use the
//                  normed rows [T, H] (fp32); backward the output gradients [T, H] of MLA and the FFN, the FFN's x
//                  again for its weight gradient (not under fp8, which keeps an FP8 copy), the scores [T, E], and
//                  the embedding's output gradient [T, H]; selective recomputation gathers the latents again (and
//                  under fp8 the FFN's x), full recomputation the whole forward of each block. Counted in the
//                  chunk that runs them (F; B with W). tp is innermost: NVLink when a tp group shares a node.
//                  The collectives are on the compute stream: exposed in full.
// A group whose ranks share a node (runtime.gpus_per_node consecutive ranks) uses NVLink, else InfiniBand; where
// ranks of one pipeline rank differ, the plan takes the one with the most InfiniBand bytes (it sets the pace).
// Time is bytes / (runtime.nvlink_gbps or runtime.infiniband_gbps, GB/s per GPU); the two links run at once.
//
// Compute: a chunk (F, B, W of a stage and micro-batch) costs its model FLOPs at runtime.achieved_tflops (an
// assumption, not a measurement): F the stage's forward FLOPs (2 x the matmul weights a token uses + causal
// attention), B and W one forward each; an FB pair (DualPipe) F and a full backward.
// Exposed time, walking the rank's program: each traffic runs beside the compute of one chunk, and what a chunk's
// compute cannot cover is exposed (shared among the traffic beside it in proportion to its time):
//   ep:   an FB pair's dispatch and combine (both chunks', V3's overlap) run beside the pair's compute; a lone F or
//         B waits for its own all-to-all (exposed in full);
//   pp:   a send runs beside the next chunk of the rank (exposed if none follows);
//   dp:   the reduce-scatter beside the rank's last chunk of the step, the all-gather beside its first (the next
//         step's forward);
//   pp_replicas: exposed in full (the sums run after the schedule).

#include <string>
#include <vector>

#include "framework/config/config.h"

namespace hai {

enum class Link { nvlink, infiniband };
std::string to_string(Link link);

// One traffic of a rank over a step.
struct Traffic {
  std::string group;       // dp | expert_dp | ep | pp | pp_replicas | tp
  std::string name;        // e.g. "reduce-scatter", "dispatch forward"; unique within the group
  std::string payload;     // what moves, e.g. "fp32 gradients of 1.86B parameters"
  Link link = Link::nvlink;
  double nvlink_bytes = 0;      // sent per step to ranks of the node
  double infiniband_bytes = 0;  // sent per step to other nodes
  double seconds = 0;           // at the configured bandwidths
  double exposed_seconds = 0;   // not hidden by compute
};

struct RankCommunication {
  int pipeline_rank = 0;
  int64_t chunks = 0;           // compute instructions of the step (an FB pair counts once)
  double compute_seconds = 0;   // the rank's chunks at runtime.achieved_tflops
  std::vector<Traffic> traffic;

  double traffic_seconds() const;
  double exposed_seconds() const;
};

// The expert all-to-all of one MoE decoder layer and micro-batch against the layer's compute (DeepSeek-V3's
// computation-to-communication ratio), on the pipeline rank with the most InfiniBand traffic.
struct MoeLayerCommunication {
  double forward_compute_seconds = 0;   // the layer's forward FLOPs at runtime.achieved_tflops; backward 2x
  double forward_seconds = 0;           // its dispatch + combine
  double backward_seconds = 0;          // the same in backward (selective: + the combine and dispatch again)
  double forward_nvlink_bytes = 0, forward_infiniband_bytes = 0;
  // compute : communication, forward (1 is DeepSeek-V3's cross-node 1:1); 0 without an exchange
  double forward_ratio() const { return forward_seconds > 0 ? forward_compute_seconds / forward_seconds : 0; }
  // an FB pair's compute (F + full B) : its all-to-all (forward + backward)
  double pair_ratio() const;
};

struct CommPlan {
  std::vector<RankCommunication> ranks;  // by pipeline rank
  MoeLayerCommunication moe_layer;
};

// The plan of a validated config (dp and micro_batches resolved, as load_config leaves them).
CommPlan plan_communication(const Config& config);

// Forward FLOPs per token of each pipeline stage (parallel/pipeline/placement.h's stages, in order): 2 x the matmul
// weights a token uses (K of the E routed experts; the output head once per prediction, MTP's included) + causal
// attention, heads x seq_len x (d_qk + d_v) per block. Three times their sum is training_flops_per_token.
std::vector<double> stage_forward_flops_per_token(const Config& config);

}  // namespace hai
