#pragma once
// The DeepSeek-V3 MoE feed-forward of layer `layer` (docs/deepseek-v3.md "MoE routing, exactly"):
//   out = shared_experts(x) + sum_k w[t, k] * expert_{idx[t, k]}(x)   (+ residual: the decoder layer's h, optional)
// in four stages, each a step of the layer's TokenDispatcher (parallel/token_dispatcher.h) but the experts: routing
// (fp32 gate GEMM on the master weight, sigmoid scores, group-limited top-k steered by
// mlp.gate.e_score_correction_bias, the sequence-wise balance loss; the dispatcher's route plans the rows) ->
// dispatch (every token's row to its K experts, in blocks by local expert) -> expert compute (RoutedExperts: grouped
// GEMMs over the blocks, whose bounds stay on the device) -> combine (the outputs back to their tokens, weighted by
// the top-k weights). Under expert parallelism the dispatcher is the ep group's all-to-all and the layer holds only
// its rank's experts; the code is the same. What travels is what the experts read, prepared per token before the
// dispatch (rows are treated one by one, so the results do not depend on ep): x in fp32 training, x rounded to bf16
// in bf16 training, x quantised in 1x128 tiles (e4m3 rows and scales, read by the experts' FP8 GEMMs) under
// precision.mode fp8; the experts' outputs come back in their saved dtype (bf16 in bf16/fp8 training, rounded
// once) and their output gradients go out in it, the input gradients come back in fp32. The experts' bf16 weight
// gradient under FP8 reads the rows dequantised straight into bf16 (at ep = 1 dispatched again from x, beyond kept
// by the dispatcher: the same bits).
// The combine sums in fp32.
// Nothing here reads device memory on the host (the balance loss stays a device tensor that the caller sums where it
// wants, accumulate_balance_loss); under expert parallelism the dispatcher's route reads its row counts once.
//
// The bias is not trained by gradients: the trainer sums accumulate_load over a step's micro-batches (and ranks)
// and calls update_router_bias on the store's bias. Layer contract: docs/design/model-layers.md.

#include <memory>
#include <optional>

#include "framework/config/config.h"
#include "framework/device/router.h"
#include "framework/metrics/step_profiler.h"
#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"
#include "model/feed_forward.h"
#include "model/routed_experts.h"
#include "parallel/expert_exchange.h"
#include "parallel/token_dispatcher.h"

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
    // Dispatch: the routing plan, the exchange's layout, the experts' outputs in sorted order (combine_backward).
    TokenDispatcher::Context dispatch;
    // Experts.
    RoutedExperts::Context experts;
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
  // Whether forward reads x rounded to bf16 beside x (expert_tokens: bf16 experts, not FP8), so that x's producer
  // may write that copy and hand it over.
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
  // input (unless FP8) nor the routed experts' SwiGLU activations (unless FP8) nor their outputs (K x H a token; under
  // FP8 their down projection's e4m3 input is kept instead); the caller hands x back with recompute_input before
  // backward_input, the experts remake their activations from gate and up and backward_input their outputs from
  // those, by forward's GEMM (the same bits), before the combine's backward, which releases them.
  void set_recompute(bool selective);
  // x: [T, H] fp32 and x_bf16 as forward got them.
  void recompute_input(Context& ctx, OwnedTensor&& x, OwnedTensor x_bf16 = {}) const;

  // load: [E] i32 += the number of tokens this micro-batch routed to each expert.
  void accumulate_load(const Context& ctx, const Tensor& load) const;
  // total: [1] fp32 on the layer's device += this micro-batch's balance loss (after forward).
  void accumulate_balance_loss(const Context& ctx, const Tensor& total) const;

  // Marks the phases of the routed experts (dispatch, expert GEMMs, combine) and the shared expert in `profiler`
  // (the caller marks where routing starts in forward and the experts' backward starts); null turns it off.
  void set_profiler(StepProfiler* profiler) {
    profiler_ = profiler;
    dispatcher_->set_profiler(profiler);
  }

 private:
  void route(Context& ctx, const Tensor& x, int64_t seq_len) const;
  // x's T rows rounded to the local experts' compute dtype before the dispatch (rows prepared per token give the
  // same bits as on their T * K copies, and the dispatch then moves half the bytes); empty when they read x itself
  // (fp32 training) or under FP8 (they read the rows the dispatch quantises, compute_experts_fp8).
  OwnedTensor expert_tokens(const Tensor& x) const;
  // expert_tokens(x) for forward: x_bf16 when x's producer handed it over, else made here.
  OwnedTensor forward_tokens(const Tensor& x, OwnedTensor x_bf16) const;
  // Whether the shared expert reads expert_tokens as they are (same dtype, no FP8 round trip): then it keeps them
  // as its saved input, and the weight gradient dispatches them again (ep = 1) instead of rounding x a second time.
  bool shared_reads_expert_tokens() const;
  // The routed experts' outputs [R, H] in the local order, in their saved dtype, from x's rows as the experts read
  // them (expert_tokens, or x itself when that is empty): routed (the dispatcher's route) and dispatched.
  OwnedTensor compute_experts(Context& ctx, const Tensor& rows) const;
  // The same under FP8, from x [T, H] fp32: its T rows quantised 1x128, their e4m3 values and scales dispatched and
  // read by the experts' FP8 GEMMs.
  OwnedTensor compute_experts_fp8(Context& ctx, const Tensor& x) const;
  // The experts' input rows [R, H] in their compute dtype for their weight gradient: dispatched again from x (the
  // shared expert's saved input when it reads expert_tokens) or kept by the dispatcher at ep > 1 without
  // recomputation (TokenDispatcher::dispatch_again; under selective recomputation the exchange runs again); under
  // FP8 the e4m3 rows (x quantised again: the same bits) dequantised.
  OwnedTensor experts_input_again(Context& ctx) const;
  // Selective recomputation: the routed experts' outputs [R, H] remade (RoutedExperts::recompute_output) and
  // returned to their tokens for the combine's backward, which releases them.
  void recompute_outputs(Context& ctx, int64_t hidden, Device device) const;
  void route_backward(Context& ctx, const Tensor& d_x, const Tensor& d_topk_weights, float balance_loss_grad) const;

  int64_t routed_experts_;
  int64_t experts_per_token_;
  RouterOptions router_options_;
  float balance_loss_alpha_;
  const Parameter* gate_;  // [E, H] fp32, used at its master value
  const Parameter* bias_;  // [E] fp32, e_score_correction_bias
  std::unique_ptr<TokenDispatcher> dispatcher_;  // the local permutation, or the ep group's all-to-all
  bool fp8_pow2_scales_;      // precision.fp8.pow2_scales, for the rows quantised for the experts' FP8 GEMMs
  RoutedExperts experts_;     // this rank's routed experts
  std::optional<FeedForward> shared_;
  TensorParallel tp_;
  int tp_size_ = 1;  // the tp ranks routing the same tokens: tp, or 1 under sequence parallelism
  StepProfiler* profiler_ = nullptr;
  bool recompute_ = false;
};

}  // namespace hai
