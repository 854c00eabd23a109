#pragma once
// One DeepSeek-V3 decoder layer (pre-norm residual block):
//   h   = x + attention(input_layernorm(x))
//   out = h + mlp(post_attention_layernorm(h))      mlp = dense SwiGLU (first_dense_layers) or MoE
// Layer contract: docs/design/model-layers.md. T = tokens, H = hidden size.

#include <optional>

#include "framework/device/rope_table.h"
#include "framework/metrics/step_profiler.h"
#include "model/feed_forward.h"
#include "model/mla_attention.h"
#include "model/moe_layer.h"

namespace hai {

class DecoderLayer {
 public:
  // experts: the expert-parallel exchange of an MoE layer (moe_layer.h); null: every routed expert is local.
  DecoderLayer(const ModelConfig& model, const ParameterStore& store, int64_t layer, const RopeTable& rope,
               ExpertExchange* experts = nullptr, TensorParallel tp = {});

  // The two norms' outputs are not kept: attention and MLP keep what they need of them. backward_input releases
  // input and residual (only the norms' backward reads them); backward_weight releases the rest. What forward
  // keeps depends on the layer's recompute mode (set_recompute, docs/design/recompute.md): under full only input,
  // positions, seq_len and the MoE's routing choice and balance loss (read by the caller after forward) stay until
  // backward_input, which first runs the forward again from input.
  struct Context {
    OwnedTensor input;           // [T, H] x
    Tensor positions;            // [T] i32, the caller's
    int64_t seq_len = 0;
    OwnedTensor attention_rstd;  // [T]
    MlaAttention::Context attention;
    OwnedTensor residual;  // [T, H] h
    OwnedTensor mlp_rstd;  // [T]
    FeedForward::Context dense;
    MoeLayer::Context moe;
  };

  // out: [T, H] <- x: [T, H] fp32; positions: [T] i32 (kept alive by the caller until backward_input). The backward
  // needs x: a copy is kept, or x itself when it is handed over.
  void forward(Context& ctx, const Tensor& out, const Tensor& x, const Tensor& positions, int64_t seq_len) const;
  void forward(Context& ctx, const Tensor& out, OwnedTensor&& x, const Tensor& positions, int64_t seq_len) const;
  // d_x: [T, H] (overwritten) <- d_out: [T, H]. balance_loss_grad: the objective's derivative with respect to
  // this layer's balance loss (ignored by dense layers). Norm weight gradients are accumulated here.
  // d_out_bf16: [T, H] d_out rounded to bf16, handed over by the layer above (its d_x_bf16) when
  // takes_bf16_output_grad(), else empty (the MLP rounds d_out itself). d_x_bf16: [T, H] bf16, optional: d_x rounded
  // once, written by the input norm's backward in its pass, for the layer below.
  void backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out, float balance_loss_grad,
                      OwnedTensor d_out_bf16 = {}, const Tensor& d_x_bf16 = {}) const;
  // Whether backward_input reads d_out rounded to bf16 (its MLP's down projection keeps d_out so: the dense MLP or
  // the MoE's shared expert, in bf16 and fp8 training), so that the layer above may write that copy and hand it over.
  bool takes_bf16_output_grad() const;
  void backward_weight(Context& ctx) const;
  // Marks the phases of this layer's parts (attention block, dense MLP or the MoE's parts) in `profiler`
  // (framework/metrics/step_profiler.h); null turns it off.
  void set_profiler(StepProfiler* profiler);
  // What forward keeps and backward_input recomputes (config train.recompute): none keeps everything backward reads;
  // selective recomputes both norms' outputs, MLA's normed latents and up-projections (q, k_nope, v) and SwiGLU's
  // outputs, but keeps the FP8 copies of FP8 GEMMs' inputs; full recomputes the whole forward from the layer's input.
  // The gradients are the same bits in every mode (the recomputation runs the forward's ops on the same values).
  void set_recompute(RecomputeMode mode);

  // The MoE block, or nullptr for a dense layer.
  const MoeLayer* moe() const { return moe_ ? &*moe_ : nullptr; }
  // total: [1] fp32 += this micro-batch's sequence-wise balance loss (nothing for a dense layer).
  void accumulate_balance_loss(const Context& ctx, const Tensor& total) const {
    if (moe_) moe_->accumulate_balance_loss(ctx.moe, total);
  }

 private:
  // The forward from ctx.input (and ctx.positions, ctx.seq_len): out <- the layer's output.
  void forward_from_input(Context& ctx, const Tensor& out) const;
  // Full recomputation: releases everything forward kept but input, positions, seq_len and the MoE's routing
  // choice and balance loss.
  void release_all_but_input(Context& ctx) const;
  // Selective recomputation: the post-attention norm's output, handed back to the MLP (from ctx.residual), and the
  // input norm's, handed back to the attention (from ctx.input), where they dropped it.
  void recompute_mlp_input(Context& ctx) const;
  void recompute_attention_input(Context& ctx) const;

  const Parameter& input_norm_;
  const Parameter& post_attention_norm_;
  float norm_eps_;
  MlaAttention attention_;
  std::optional<FeedForward> dense_;
  std::optional<MoeLayer> moe_;
  StepProfiler* profiler_ = nullptr;
  RecomputeMode recompute_ = RecomputeMode::none;
};

}  // namespace hai
