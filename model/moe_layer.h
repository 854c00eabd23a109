#pragma once
// The DeepSeek-V3 MoE feed-forward of layer `layer` (docs/deepseek-v3.md "MoE routing, exactly"):
//   out = shared_experts(x) + sum_k w[t, k] * expert_{idx[t, k]}(x)   (+ residual: the decoder layer's h, optional)
// in four stages: routing (fp32 gate GEMM on the master weight, sigmoid scores, group-limited top-k steered by
// mlp.gate.e_score_correction_bias, the sequence-wise balance loss) -> dispatch (permute the tokens into
// per-expert blocks) -> expert compute (RoutedExperts: grouped GEMMs over the blocks, whose bounds stay on the
// device) -> combine (unpermute, weighted by the top-k weights). Under expert parallelism an ExpertExchange
// (parallel/expert_exchange.h) sends the sorted rows to the ranks owning their experts before the expert compute
// and brings the outputs back after it (and the same for their gradients); the layer then holds only its rank's
// experts. In precision.mode fp8 (the experts' weights have FP8 copies) the rows are dispatched in FP8
// (ExpertExchange::dispatch_fp8, 1x128 tiles) and the experts' FP8 GEMMs read the e4m3 rows and scales that arrive;
// without expert parallelism the T token rows are quantised the same way and their e4m3 rows and scales permuted
// (per row and a copy: the same bits), so the results do not depend on ep. The experts' bf16 weight gradient reads
// the rows dequantised straight into bf16 (without expert parallelism the T token rows, quantised as the dispatch
// quantises them, before they are permuted): round_trip_fp8_rows's values rounded once. The combine sums in fp32; in
// bf16 training the expert outputs and their gradients are rows of bf16 (the experts' compute dtype), rounded once,
// with or without an exchange.
// Nothing here reads device memory on the host (but the exchange, which reads the per-expert row counts): the
// balance loss stays a device tensor that the caller sums where it wants (accumulate_balance_loss).
//
// The bias is not trained by gradients: the trainer sums accumulate_load over a step's micro-batches (and ranks)
// and calls update_router_bias on the store's bias. Layer contract: docs/design/model-layers.md.

#include <memory>
#include <optional>

#include "framework/config/config.h"
#include "framework/device/router.h"
#include "framework/device/token_permutation.h"
#include "framework/metrics/step_profiler.h"
#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"
#include "model/feed_forward.h"
#include "model/routed_experts.h"
#include "parallel/expert_exchange.h"

namespace hai {

class MoeLayer {
 public:
  // experts: the expert-parallel exchange (the store holds the routed experts of its rank only); null: all local.
  // tp: tensor parallelism. The shared experts are a tensor-parallel region (feed_forward.h); the router and the
  // routed experts run on every tp rank for all its tokens (the same tokens on every tp rank), so the expert-DP
  // group, which spans the tp ranks, sums tp copies of each expert's gradient: the routed experts' backward reads
  // d_out / tp, and what it gives the router and x is scaled back by tp (exact for tp a power of two).
  // Under sequence parallelism (parallel/sequence_parallel.h) x and out are this tp rank's rows [T / tp, H]: the
  // router and the routed experts see each token once, with no d_out / tp scaling; the balance loss gathers the
  // scores (sequence_balance_loss.h).
  MoeLayer(const ModelConfig& config, const ParameterStore& store, int64_t layer, ExpertExchange* experts = nullptr,
           TensorParallel tp = {});

  // T = tokens, H = hidden size, E = routed experts, K = experts per token, N = sequences.
  struct Context {
    // Routing.
    OwnedTensor input;                       // [T, H] fp32 x (wgrad of the gate)
    OwnedTensor scores;                      // [T, E] fp32 sigmoid scores
    OwnedTensor topk_indices;                // [T, K] i32 chosen experts, best first
    OwnedTensor topk_weights;                // [T, K] fp32 combine weights
    OwnedTensor expert_fraction;             // [N, E] fp32 f of the balance loss
    OwnedTensor sequence_balance_loss;       // [N] fp32; their mean is this layer's term of the loss
    std::unique_ptr<OwnedRoutingPlan> plan;  // token order sorted by expert
    // Experts.
    RoutedExperts::Context experts;
    // Expert parallelism only: where the sorted rows went, and the bounds of the local experts' received rows.
    ExpertExchange::Route route;
    OwnedTensor local_offsets;  // [local experts + 1] i32
    // FP8 only: each local expert's rows split by source rank, and padded (RoutedExperts::Context's segments).
    OwnedTensor token_segments, padded_segments;  // [local experts * ep + 1] i32
    OwnedTensor padded_local_offsets;             // [local experts + 1] i32
    // [T * K, H] routed outputs in sorted order, in model/in_dtype.h's saved_activation_dtype (bf16 in bf16/fp8
    // training): read by the combine's backward only, which releases it.
    OwnedTensor expert_output;
    std::optional<FeedForward::Context> shared;
    // Saved by backward_input for backward_weight.
    OwnedTensor d_logits;  // [T, E] fp32
  };

  // out: [T, H] <- x: [T, H] fp32, T a multiple of seq_len (the balance loss is per sequence of seq_len tokens).
  // x handed over is kept for the gate's weight gradient; the other form keeps a copy. residual: [T, H] fp32 apart
  // from out, or not defined: out = residual + the layer's output, summed in fp32 from the residual, then the routed
  // experts' weighted rows in k order (the combine, unpermute_tokens), then the shared expert's output (its down
  // projection's GEMM accumulates into out). Its gradient is d_out itself, so backward_input does not see it.
  // x_bf16: [T, H] x rounded to bf16, handed over by x's producer when takes_bf16_input() (the decoder layer's norm
  // writes it in its own pass), read in place of the rounding pass of expert_tokens; else empty.
  void forward(Context& ctx, const Tensor& out, OwnedTensor&& x, int64_t seq_len, const Tensor& residual = {},
               OwnedTensor x_bf16 = {}) const;
  void forward(Context& ctx, const Tensor& out, const Tensor& x, int64_t seq_len, const Tensor& residual = {}) const;
  // Whether forward reads x rounded to bf16 beside x (expert_tokens: bf16 experts without expert parallelism or
  // FP8), so that x's producer may write that copy and hand it over.
  bool takes_bf16_input() const;
  // d_x: [T, H] <- d_out: [T, H]. Overwrites d_x. balance_loss_grad is the derivative of the trained objective
  // with respect to this layer's balance loss, the mean of ctx.sequence_balance_loss (the scale the loss got,
  // e.g. the trainer's per-micro-batch loss scale). d_out_bf16: [T, H] d_out rounded to bf16, handed over by
  // d_out's producer when takes_bf16_output_grad() (for the shared expert, in place of its rounding pass); else
  // empty.
  void backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out, float balance_loss_grad,
                      OwnedTensor d_out_bf16 = {}) const;
  // Whether backward_input reads d_out rounded to bf16 beside d_out (the shared expert's down projection keeps it
  // so: bf16 and fp8 training), so that d_out's producer may write that copy and hand it over.
  bool takes_bf16_output_grad() const { return shared_ && shared_->output_grad_dtype() == DType::bf16; }
  // Accumulates the gradients of the gate, the shared experts and the routed experts that received tokens, then
  // releases what ctx holds for it.
  void backward_weight(Context& ctx) const;

  // Selective recomputation: forward does not keep x (the post-attention norm's output) nor the shared expert's
  // input (unless FP8) nor the routed experts' SwiGLU activations (unless FP8); the caller hands x back with
  // recompute_input before backward_input, the experts remake their activations from gate and up.
  void set_recompute(bool selective);
  // x: [T, H] fp32 and x_bf16 as forward got them.
  void recompute_input(Context& ctx, OwnedTensor&& x, OwnedTensor x_bf16 = {}) const;

  // load: [E] i32 += the number of tokens this micro-batch routed to each expert.
  void accumulate_load(const Context& ctx, const Tensor& load) const;
  // total: [1] fp32 on the layer's device += this micro-batch's balance loss (after forward).
  void accumulate_balance_loss(const Context& ctx, const Tensor& total) const;

  // Marks the phases of the routed experts (dispatch, expert GEMMs, combine) and the shared expert in `profiler`
  // (the caller marks where routing starts in forward and the experts' backward starts); null turns it off.
  void set_profiler(StepProfiler* profiler) { profiler_ = profiler; }

 private:
  void route(Context& ctx, const Tensor& x, int64_t seq_len) const;
  // x's T rows as the local experts' non-FP8 GEMMs read them before the permutation: the FP8 dispatch's round trip
  // (under FP8 only the weight gradient reads them) and the rounding to their compute dtype (rows prepared per token
  // give the same bits as on their T * K copies, and the copy then moves half the bytes); empty when they read x
  // itself (expert parallelism: the exchange moves fp32 rows and quantises them itself; fp32 training).
  OwnedTensor expert_tokens(const Tensor& x) const;
  // expert_tokens(x) for forward: x_bf16 when x's producer handed it over, else made here (empty under FP8, where
  // the experts read the rows the dispatch quantises).
  OwnedTensor forward_tokens(const Tensor& x, OwnedTensor x_bf16) const;
  // Whether the shared expert reads expert_tokens as they are (same dtype, no FP8 round trip): then it keeps them
  // as its saved input, and backward_weight permutes them again instead of rounding x a second time.
  bool shared_reads_expert_tokens() const;
  // [T * K, H] the tokens (expert_tokens, or x itself when that is empty) in the plan's sorted order. NOTE: without
  // expert parallelism backward_weight recomputes these rows rather than the experts keeping them.
  OwnedTensor sorted_rows(const Context& ctx, const Tensor& x, const OwnedTensor& tokens) const;
  OwnedTensor permuted(const Context& ctx, const Tensor& rows) const;  // [T * K, H] <- rows [T, H], any float dtype
  // Writes the routed outputs [T * K, H] in sorted order to ctx.expert_output (bf16 in bf16 training without an
  // exchange, else fp32).
  void compute_experts(Context& ctx, const Tensor& x_sorted) const;
  // The same without an exchange under FP8, from x [T, H] fp32: its T rows quantised 1x128 as the FP8 dispatch
  // quantises them, their e4m3 values and scales permuted, read by the experts' FP8 GEMMs (outputs bf16).
  void compute_local_experts_fp8(Context& ctx, const Tensor& x) const;
  // Expert parallelism: exchanges the row counts into ctx.route and ctx.local_offsets.
  void route_to_owners(Context& ctx) const;
  void split_by_source(Context& ctx, Device device) const;
  void combine(const Context& ctx, const Tensor& out, const Tensor& residual) const;

  void combine_backward(const Context& ctx, const Tensor& d_expert_output, const Tensor& d_topk_weights,
                        const Tensor& d_out) const;
  void experts_backward(Context& ctx, const Tensor& d_x_sorted, OwnedTensor d_expert_output) const;
  void dispatch_backward(const Context& ctx, const Tensor& d_x, const Tensor& d_x_sorted) const;
  void route_backward(Context& ctx, const Tensor& d_x, const Tensor& d_topk_weights, float balance_loss_grad) const;

  int64_t routed_experts_;
  int64_t experts_per_token_;
  RouterOptions router_options_;
  float balance_loss_alpha_;
  const Parameter* gate_;  // [E, H] fp32, used at its master value
  const Parameter* bias_;  // [E] fp32, e_score_correction_bias
  ExpertExchange* exchange_;  // null without expert parallelism
  bool fp8_dispatch_;         // precision.mode fp8: the routed rows go to the experts in FP8
  bool fp8_pow2_scales_;      // precision.fp8.pow2_scales, for those rows
  RoutedExperts experts_;     // this rank's routed experts
  std::optional<FeedForward> shared_;
  TensorParallel tp_;
  int tp_size_ = 1;  // the tp ranks routing the same tokens: tp, or 1 under sequence parallelism
  StepProfiler* profiler_ = nullptr;
  bool recompute_ = false;
};

}  // namespace hai
