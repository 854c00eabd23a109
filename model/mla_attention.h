#pragma once
// Multi-head latent attention (MLA), the naive training path of docs/deepseek-v3.md "MLA, exactly", on the
// parameters model.layers.{layer}.self_attn.*. With H heads, d_qk = d_nope + d_rope and x already normed by the
// decoder layer's input_layernorm:
//   c_q  = RMSNorm(x W_dq^T)                      q_a_proj, q_a_layernorm         [T, q_lora]
//   q    = c_q W_uq^T                             q_b_proj                        [T, H, d_nope | d_rope]
//   ckv  = x W_dkv^T                              kv_a_proj_with_mqa              [T, kv_lora | d_rope]
//   kv   = RMSNorm(c_kv) W_ukv^T                  kv_a_layernorm, kv_b_proj       [T, H, d_nope | d_v]
//   k    = [k_nope | k_rope broadcast over heads]                                 [T, H, d_nope | d_rope]
//   o    = softmax(causal(q k^T * scale)) v       per sequence, softmax in fp32   [T, H, d_v]
//   out  = o W_o^T                                o_proj                          [T, hidden]
// RoPE (interleaved, YaRN) rotates the d_rope columns of q per head and k_rope once per token. The softmax scale is
// d_qk^-0.5, times mscale^2 when YaRN is active. The attention core (attention_mla.h) reads q, kv and k_rope as they
// are made, in bf16 when the projections compute in bf16 (rounded after RoPE, like tensor-core inputs), in fp32
// otherwise; its softmax and the q, k, v gradients are fp32. In bf16 and fp8 training the passes between the
// projections and the attention core write bf16 only: kv_b_proj outputs bf16, q is rotated into bf16, o is bf16,
// and the attention backward writes d_q (rotated back) and d_kv in bf16 itself (each value rounded once, where it
// was rounded before, or in fp8 training before its e4m3 quantisation). d_o is bf16 in bf16 training; with FP8 it
// stays fp32, as rounding it would change the attention backward's D = dot(d_o, o), not only an FP8 GEMM's operand.
// Follows docs/design/model-layers.md (forward / backward_input / backward_weight).
// Tensor parallelism (docs/design/tensor-parallel.md): the store holds this tp rank's H / tp heads of q_b_proj,
// kv_b_proj (column-parallel) and o_proj (row-parallel), and q_a_proj, kv_a_proj_with_mqa and the two latent norms
// whole; H below is the rank's heads. The tensor-parallel region starts at the latents (the up-projections' inputs
// and k_rope, whose gradients are summed over the tp ranks in backward) and ends at o_proj's output (summed in
// forward), so the replicated projections and norms get the same whole gradient on every tp rank.
// Sequence parallelism (parallel/sequence_parallel.h): x, out and their gradients are this tp rank's rows
// [T_r = T / tp, hidden]; q_a_proj, kv_a_proj_with_mqa, the latent norms and k_rope's RoPE run on those rows, and the
// region's inputs (the normed latents and k_rope) are gathered over the tp ranks (their gradients reduce-scattered);
// o_proj's partial outputs are reduce-scattered. The replicated parameters then get this rank's tokens' part of their
// gradient, which the trainer sums over the tp ranks. positions stay [T] (all tokens).

#include <cstdint>

#include "framework/config/config.h"
#include "framework/device/rope_table.h"
#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"
#include "model/linear.h"
#include "parallel/tensor_parallel.h"

namespace hai {

// The RoPE table settings of a model: rope_dim = qk_rope_head_dim, max_positions = max_seq_len, theta and YaRN.
RopeSettings mla_rope_settings(const ModelConfig& model);

class MlaAttention {
 public:
  // rope: the table of mla_rope_settings(model), owned by the caller and shared by all layers.
  MlaAttention(const ModelConfig& model, const ParameterStore& store, int64_t layer, const RopeTable& rope,
               TensorParallel tp = {});

  struct Context {
    int64_t seq_len = 0;
    Tensor positions;              // [T] i32, the caller's (kept alive by it until backward_input)
    OwnedTensor x;                 // [T, hidden], q_a_proj's saved input (also kv_a_proj_with_mqa's)
    OwnedTensor q_latent;          // [T, q_lora] before q_a_layernorm
    OwnedTensor q_latent_rstd;     // [T]
    OwnedTensor q_latent_normed;   // [T, q_lora], q_b_proj's saved input
    OwnedTensor kv_latent;         // [T, kv_lora] before kv_a_layernorm
    OwnedTensor kv_latent_rstd;    // [T]
    OwnedTensor kv_latent_normed;  // [T, kv_lora], kv_b_proj's saved input
    OwnedTensor q;                 // [T, H, d_qk], rotated, attention dtype
    OwnedTensor kv;                // [T, H, d_nope + d_v], kv_b_proj's output: k_nope and v, attention dtype
    OwnedTensor k_rope;            // [T, d_rope], rotated, attention dtype
    OwnedTensor o;                 // [T, H, d_v], attention dtype; only when o_input is not o itself (FP8, fp16)
    OwnedTensor o_input;           // [T, H * d_v], o_proj's saved input when it is o itself; else made from o by
                                   // backward_weight (FP8: quantised again, the same bits), not kept from forward
    OwnedTensor lse;               // [B, H, S]
    // Output gradients of the five projections (in Linear::output_grad_dtype, or with FP8 quantised for wgrad),
    // prepared by backward_input for backward_weight (which releases everything). backward_input releases what
    // only it reads: q_latent, kv_latent, their rstd, q, kv, k_rope and lse (o stays for o_proj's weight gradient).
    Linear::PreparedOutputGrad d_out;       // [T, hidden]
    Linear::PreparedOutputGrad d_q;         // [T, H * d_qk]
    Linear::PreparedOutputGrad d_kv;        // [T, H * (d_nope + d_v)]
    Linear::PreparedOutputGrad d_ckv;       // [T, kv_lora + d_rope]
    Linear::PreparedOutputGrad d_q_latent;  // [T, q_lora]
  };

  // out: [T, hidden] <- x: [T, hidden] fp32 or input_dtype() (kept for the weight gradients without a copy when it
  // has the compute dtype), positions: [T] i32 (t % seq_len), T = batch * seq_len.
  void forward(Context& ctx, const Tensor& out, OwnedTensor&& x, const Tensor& positions, int64_t seq_len) const;
  // The same from a copy of x in input_dtype().
  void forward(Context& ctx, const Tensor& out, const Tensor& x, const Tensor& positions, int64_t seq_len) const;
  // The dtype in which the producer of x should write it: Linear::input_dtype of q_a_proj.
  DType input_dtype() const { return q_a_proj_.input_dtype(); }
  // d_x: [T, hidden] (overwritten) <- d_out: [T, hidden]. Accumulates the two RMSNorm weights' gradients.
  void backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out) const;
  // The same from d_out handed over: kept for o_proj's weight gradient without a copy when it has output_grad_dtype()
  // (the decoder layer's norm writes it so in its own pass).
  void backward_input(Context& ctx, const Tensor& d_x, OwnedTensor&& d_out) const;
  // The dtype in which backward_input keeps d_out: Linear::output_grad_dtype of o_proj.
  DType output_grad_dtype() const { return o_proj_.output_grad_dtype(); }
  // Accumulates the five projection weights' gradients, then releases everything ctx holds.
  void backward_weight(Context& ctx) const;

  // Selective recomputation (DeepSeek-V3's recipe): forward keeps neither the normed latents nor q and kv (the
  // up-projections' outputs: per-head q, k_nope and v), nor x unless it is q_a_proj's FP8 copy; recompute() makes
  // them again before backward_input, the same bits.
  void set_recompute(bool selective) { recompute_ = selective; }
  // Whether forward drops x, so that recompute() takes it back from the caller (the decoder layer's input norm).
  bool recomputes_input() const { return recompute_ && !q_a_proj_.uses_fp8(); }
  // Before backward_input under selective recomputation: x: [T, hidden] as forward got it when recomputes_input(),
  // else empty. Remakes the normed latents, q and kv from the latents forward kept.
  void recompute(Context& ctx, OwnedTensor&& x) const;

 private:
  // q: [T, H, d_qk] <- x: [T_r, hidden] prepared for q_a_proj (the q path up to and including RoPE); T_r = rows,
  // this tp rank's under sequence parallelism (header), else T.
  void forward_query(Context& ctx, const Linear::PreparedInput& input, int64_t rows, Device device) const;
  // kv: [T, H, d_nope + d_v], k_rope: [T, d_rope] <- x: [T, hidden] prepared for kv_a_proj_with_mqa (the kv path).
  void forward_key_value(Context& ctx, const Linear::PreparedInput& input, int64_t rows, Device device) const;
  // The up-projections: ctx.q (rotated), ctx.q_latent_normed and its rstd <- ctx.q_latent; ctx.kv,
  // ctx.kv_latent_normed and its rstd <- ctx.kv_latent.
  void project_query(Context& ctx) const;
  void project_key_value(Context& ctx) const;
  // x: [T, ..., W] fp32 with its RoPE columns from column_offset rotated (backward: rotated back), in `dtype`:
  // rotated into bf16 in one pass, else in place and then converted.
  OwnedTensor rotated(OwnedTensor x, int64_t column_offset, DType dtype, const Tensor& positions,
                      bool backward) const;
  // The attention output o [T, H, d_v] for the attention backward: ctx.o, or o_proj's saved input (o itself).
  Tensor attention_output(const Context& ctx) const;
  // The dtype in which the attention backward writes a gradient that `projection` reads: its output gradient
  // dtype when that is bf16, else fp32 (converted after).
  static DType attention_gradient_dtype(const Linear& projection);
  // d_x: [T, hidden] (overwritten) <- d_q: [T, H, d_qk] rotated back (then kept in ctx.d_q)
  void backward_query(Context& ctx, const Tensor& d_x, OwnedTensor d_q) const;
  // d_x: [T, hidden] (accumulated) <- d_kv: [T, H, d_nope + d_v] (then kept in ctx.d_kv), d_k_rope: [T, H, d_rope]
  void backward_key_value(Context& ctx, const Tensor& d_x, OwnedTensor d_kv, const Tensor& d_k_rope) const;

  int64_t heads_;
  int64_t nope_dim_;
  int64_t rope_dim_;
  int64_t value_dim_;
  int64_t kv_lora_rank_;
  float norm_eps_;
  float softmax_scale_;
  DType attention_dtype_;  // of q, k and v: bf16 when the projections compute in bf16, else fp32
  const RopeTable& rope_;
  Linear q_a_proj_;
  Linear q_b_proj_;
  Linear kv_a_proj_;
  Linear kv_b_proj_;
  Linear o_proj_;
  const Parameter* q_a_norm_ = nullptr;   // [q_lora]
  const Parameter* kv_a_norm_ = nullptr;  // [kv_lora]
  bool recompute_ = false;
  TensorParallel tp_;
};

}  // namespace hai
