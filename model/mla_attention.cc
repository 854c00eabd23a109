#include "model/mla_attention.h"

#include <string>
#include <utility>

#include "framework/device/attention.h"
#include "framework/device/column_copy.h"
#include "framework/device/rmsnorm.h"
#include "framework/device/rope.h"
#include "model/in_dtype.h"
#include "model/parameters.h"

namespace hai {
namespace {

OwnedTensor f32_tensor(Shape shape, Device device) { return OwnedTensor(shape, DType::f32, device); }

// [T, H * W] view of [T, H, W], the layout of a projection's output.
Tensor flatten_heads(const Tensor& per_head) {
  return per_head.reshape(Shape{per_head.size(0), per_head.size(1) * per_head.size(2)});
}

// [B, S, H, W] view of [T, H, W], T = B * S: the layout of the attention op.
Tensor per_sequence(const Tensor& per_head, int64_t seq_len) {
  return per_head.reshape(Shape{per_head.size(0) / seq_len, seq_len, per_head.size(1), per_head.size(2)});
}

}  // namespace

RopeSettings mla_rope_settings(const ModelConfig& model) {
  const YarnConfig& yarn = model.rope.yarn;
  return {.rope_dim = model.qk_rope_head_dim,
          .max_positions = model.max_seq_len,
          .theta = model.rope.theta,
          .yarn_factor = yarn.factor,
          .original_max_position = yarn.original_max_position,
          .beta_fast = yarn.beta_fast,
          .beta_slow = yarn.beta_slow,
          .mscale = yarn.mscale};
}

MlaAttention::MlaAttention(const ModelConfig& model, const ParameterStore& store, int64_t layer, const RopeTable& rope)
    : heads_(model.num_heads),
      nope_dim_(model.qk_nope_head_dim),
      rope_dim_(model.qk_rope_head_dim),
      value_dim_(model.v_head_dim),
      kv_lora_rank_(model.kv_lora_rank),
      norm_eps_(static_cast<float>(model.norm_eps)),
      softmax_scale_(static_cast<float>(
          attention_softmax_scale(model.qk_nope_head_dim + model.qk_rope_head_dim, mla_rope_settings(model)))),
      rope_(rope) {
  HAI_CHECK(2 * rope.cos.size(1) == rope_dim_, "MLA layer {}: a RoPE table of {} columns for qk_rope_head_dim {}",
            layer, 2 * rope.cos.size(1), rope_dim_);
  std::string prefix = layer_prefix(layer) + "self_attn.";
  q_a_proj_ = Linear(store[prefix + "q_a_proj.weight"]);
  q_b_proj_ = Linear(store[prefix + "q_b_proj.weight"]);
  kv_a_proj_ = Linear(store[prefix + "kv_a_proj_with_mqa.weight"]);
  kv_b_proj_ = Linear(store[prefix + "kv_b_proj.weight"]);
  o_proj_ = Linear(store[prefix + "o_proj.weight"]);
  attention_dtype_ = o_proj_.compute_dtype() == DType::bf16 ? DType::bf16 : DType::f32;
  const Parameter& q_norm = store[prefix + "q_a_layernorm.weight"];
  const Parameter& kv_norm = store[prefix + "kv_a_layernorm.weight"];
  q_a_norm_weight_ = q_norm.value;
  q_a_norm_grad_ = q_norm.grad;
  kv_a_norm_weight_ = kv_norm.value;
  kv_a_norm_grad_ = kv_norm.grad;
}

void MlaAttention::forward(Context& ctx, const Tensor& out, const Tensor& x, const Tensor& positions,
                           int64_t seq_len) const {
  int64_t tokens = x.size(0);
  HAI_CHECK(seq_len > 0 && tokens % seq_len == 0, "MLA: {} tokens are not whole sequences of {}", tokens, seq_len);
  ctx.seq_len = seq_len;
  ctx.positions = positions;
  Linear::PreparedInput input = q_a_proj_.prepare_input(x);  // read by q_a_proj and kv_a_proj_with_mqa alike
  forward_query(ctx, x, input);
  forward_key_value(ctx, x, input);
  ctx.x = std::move(input.saved);
  OwnedTensor o = f32_tensor(Shape{tokens, heads_, value_dim_}, x.device());  // [T, H, d_v]
  ctx.lse = f32_tensor(Shape{tokens / seq_len, heads_, seq_len}, x.device());
  attention_forward(per_sequence(o, seq_len), ctx.lse, per_sequence(ctx.q, seq_len), per_sequence(ctx.k, seq_len),
                    per_sequence(ctx.v, seq_len), softmax_scale_);
  o_proj_.forward(out, flatten_heads(o), ctx.o_input);
  // NOTE: o_proj saved o itself when its saved input has the attention dtype (bf16 or fp32, not FP8): no 2nd copy.
  if (ctx.o_input.tensor().dtype() != attention_dtype_) ctx.o = in_dtype(std::move(o), attention_dtype_);
}

void MlaAttention::forward_query(Context& ctx, const Tensor& x, const Linear::PreparedInput& input) const {
  int64_t tokens = x.size(0);
  int64_t q_lora_rank = q_a_proj_.out_features();
  ctx.q_latent = f32_tensor(Shape{tokens, q_lora_rank}, x.device());
  q_a_proj_.forward(ctx.q_latent, input);
  OwnedTensor q_latent_normed = f32_tensor(Shape{tokens, q_lora_rank}, x.device());  // [T, q_lora]
  ctx.q_latent_rstd = f32_tensor(Shape{tokens}, x.device());
  rmsnorm_forward(q_latent_normed, ctx.q_latent_rstd, ctx.q_latent, q_a_norm_weight_, norm_eps_);
  OwnedTensor q = f32_tensor(Shape{tokens, heads_, nope_dim_ + rope_dim_}, x.device());  // [T, H, d_qk]
  q_b_proj_.forward(flatten_heads(q), q_latent_normed, ctx.q_latent_normed);
  rope_forward(q, q, ctx.positions, rope_, nope_dim_);
  ctx.q = in_dtype(std::move(q), attention_dtype_);
}

void MlaAttention::forward_key_value(Context& ctx, const Tensor& x, const Linear::PreparedInput& input) const {
  int64_t tokens = x.size(0);
  OwnedTensor ckv = f32_tensor(Shape{tokens, kv_lora_rank_ + rope_dim_}, x.device());  // [T, kv_lora + d_rope]
  kv_a_proj_.forward(ckv, input);
  rope_forward(ckv, ckv, ctx.positions, rope_, kv_lora_rank_);
  ctx.kv_latent = f32_tensor(Shape{tokens, kv_lora_rank_}, x.device());
  copy_columns(ctx.kv_latent, ckv, {.width = kv_lora_rank_});
  OwnedTensor kv_latent_normed = f32_tensor(Shape{tokens, kv_lora_rank_}, x.device());  // [T, kv_lora]
  ctx.kv_latent_rstd = f32_tensor(Shape{tokens}, x.device());
  rmsnorm_forward(kv_latent_normed, ctx.kv_latent_rstd, ctx.kv_latent, kv_a_norm_weight_, norm_eps_);
  OwnedTensor kv = f32_tensor(Shape{tokens, heads_, nope_dim_ + value_dim_}, x.device());  // [T, H, d_nope + d_v]
  kv_b_proj_.forward(flatten_heads(kv), kv_latent_normed, ctx.kv_latent_normed);
  OwnedTensor k = f32_tensor(Shape{tokens, heads_, nope_dim_ + rope_dim_}, x.device());  // [T, H, d_qk]
  copy_columns(k, kv, {.width = nope_dim_});
  copy_columns(k, ckv, {.dst_offset = nope_dim_, .src_offset = kv_lora_rank_, .width = rope_dim_});
  ctx.k = in_dtype(std::move(k), attention_dtype_);
  OwnedTensor v = f32_tensor(Shape{tokens, heads_, value_dim_}, x.device());  // [T, H, d_v]
  copy_columns(v, kv, {.src_offset = nope_dim_, .width = value_dim_});
  ctx.v = in_dtype(std::move(v), attention_dtype_);
}

void MlaAttention::backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out) const {
  int64_t tokens = d_out.size(0);
  int64_t qk_dim = nope_dim_ + rope_dim_;
  ctx.d_out = to_compute_dtype(d_out, o_proj_.output_grad_dtype());  // NOTE: a copy; the caller may reuse d_out.
  OwnedTensor d_o = f32_tensor(Shape{tokens, heads_, value_dim_}, d_out.device());  // [T, H, d_v]
  o_proj_.backward_input(flatten_heads(d_o), ctx.d_out);
  OwnedTensor d_q = f32_tensor(Shape{tokens, heads_, qk_dim}, d_out.device());      // [T, H, d_qk]
  OwnedTensor d_k = f32_tensor(Shape{tokens, heads_, qk_dim}, d_out.device());      // [T, H, d_qk]
  OwnedTensor d_v = f32_tensor(Shape{tokens, heads_, value_dim_}, d_out.device());  // [T, H, d_v]
  OwnedTensor o = attention_output(ctx);                                             // [T, H, d_v] fp32
  int64_t s = ctx.seq_len;
  attention_backward(per_sequence(d_q, s), per_sequence(d_k, s), per_sequence(d_v, s), per_sequence(d_o, s),
                     per_sequence(ctx.q, s), per_sequence(ctx.k, s), per_sequence(ctx.v, s), per_sequence(o, s),
                     ctx.lse, softmax_scale_);
  for (OwnedTensor* released : {&o, &ctx.q, &ctx.k, &ctx.v, &ctx.lse}) *released = OwnedTensor();
  backward_query(ctx, d_x, std::move(d_q));
  backward_key_value(ctx, d_x, d_k, d_v);
}

OwnedTensor MlaAttention::attention_output(Context& ctx) const {
  if (ctx.o.tensor().raw() != nullptr) return in_dtype(std::move(ctx.o), DType::f32);
  const Tensor& saved = ctx.o_input.tensor();  // [T, H * d_v], kept for o_proj's weight gradient
  return to_compute_dtype(saved.reshape(Shape{saved.size(0), heads_, value_dim_}), DType::f32);
}

void MlaAttention::backward_query(Context& ctx, const Tensor& d_x, OwnedTensor d_q) const {
  int64_t tokens = d_x.size(0);
  int64_t q_lora_rank = q_a_proj_.out_features();
  rope_backward(d_q, d_q, ctx.positions, rope_, nope_dim_);
  ctx.d_q = in_dtype(std::move(d_q), q_b_proj_.output_grad_dtype());
  OwnedTensor d_q_latent_normed = f32_tensor(Shape{tokens, q_lora_rank}, d_x.device());  // [T, q_lora]
  q_b_proj_.backward_input(d_q_latent_normed, flatten_heads(ctx.d_q));
  OwnedTensor d_q_latent = f32_tensor(Shape{tokens, q_lora_rank}, d_x.device());  // [T, q_lora]
  rmsnorm_backward(d_q_latent, q_a_norm_grad_, d_q_latent_normed, ctx.q_latent, q_a_norm_weight_,
                   ctx.q_latent_rstd);
  ctx.q_latent = OwnedTensor();
  ctx.q_latent_rstd = OwnedTensor();
  ctx.d_q_latent = in_dtype(std::move(d_q_latent), q_a_proj_.output_grad_dtype());
  q_a_proj_.backward_input(d_x, ctx.d_q_latent);
}

void MlaAttention::backward_key_value(Context& ctx, const Tensor& d_x, const Tensor& d_k, const Tensor& d_v) const {
  int64_t tokens = d_x.size(0);
  OwnedTensor d_kv = f32_tensor(Shape{tokens, heads_, nope_dim_ + value_dim_}, d_x.device());  // [T, H, d_nope + d_v]
  copy_columns(d_kv, d_k, {.width = nope_dim_});
  copy_columns(d_kv, d_v, {.dst_offset = nope_dim_, .width = value_dim_});
  ctx.d_kv = in_dtype(std::move(d_kv), kv_b_proj_.output_grad_dtype());
  OwnedTensor d_kv_latent_normed = f32_tensor(Shape{tokens, kv_lora_rank_}, d_x.device());  // [T, kv_lora]
  kv_b_proj_.backward_input(d_kv_latent_normed, flatten_heads(ctx.d_kv));
  OwnedTensor d_kv_latent = f32_tensor(Shape{tokens, kv_lora_rank_}, d_x.device());  // [T, kv_lora]
  rmsnorm_backward(d_kv_latent, kv_a_norm_grad_, d_kv_latent_normed, ctx.kv_latent, kv_a_norm_weight_,
                   ctx.kv_latent_rstd);
  ctx.kv_latent = OwnedTensor();
  ctx.kv_latent_rstd = OwnedTensor();
  OwnedTensor d_ckv = f32_tensor(Shape{tokens, kv_lora_rank_ + rope_dim_}, d_x.device());  // [T, kv_lora + d_rope]
  copy_columns(d_ckv, d_kv_latent, {.width = kv_lora_rank_});
  // k_rope is shared by all heads: its gradient is the sum over them.
  sum_columns(d_ckv, d_k, {.dst_offset = kv_lora_rank_, .src_offset = nope_dim_, .width = rope_dim_});
  rope_backward(d_ckv, d_ckv, ctx.positions, rope_, kv_lora_rank_);
  ctx.d_ckv = in_dtype(std::move(d_ckv), kv_a_proj_.output_grad_dtype());
  kv_a_proj_.backward_input(d_x, ctx.d_ckv, /*accumulate=*/true);
}

void MlaAttention::backward_weight(Context& ctx) const {
  o_proj_.backward_weight(ctx.d_out, ctx.o_input);
  kv_b_proj_.backward_weight(flatten_heads(ctx.d_kv), ctx.kv_latent_normed);
  kv_a_proj_.backward_weight(ctx.d_ckv, ctx.x);
  q_b_proj_.backward_weight(flatten_heads(ctx.d_q), ctx.q_latent_normed);
  q_a_proj_.backward_weight(ctx.d_q_latent, ctx.x);
  ctx = Context{};
}

}  // namespace hai
