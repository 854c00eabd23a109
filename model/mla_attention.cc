#include "model/mla_attention.h"

#include <string>
#include <utility>

#include "framework/device/attention.h"
#include "framework/device/attention_mla.h"
#include "framework/device/column_copy.h"
#include "framework/device/rmsnorm.h"
#include "framework/device/rope.h"
#include "model/in_dtype.h"
#include "model/parameters.h"
#include "parallel/sequence_parallel.h"

namespace hai {
namespace {

OwnedTensor f32_tensor(Shape shape, Device device) { return OwnedTensor(shape, DType::f32, device); }

// [T, H * W] view of [T, H, W], the layout of a projection's output.
Tensor flatten_heads(const Tensor& per_head) {
  return per_head.reshape(Shape{per_head.size(0), per_head.size(1) * per_head.size(2)});
}

// The same for a tensor handed over: [T, H, W] reshaped to [T, H * W].
OwnedTensor flatten_heads(OwnedTensor&& per_head) {
  per_head.reshape(flatten_heads(per_head.tensor()).shape());
  return per_head;
}

// [B, S, H, W] view of [T, H, W], T = B * S: the layout of the attention op.
Tensor per_sequence(const Tensor& per_head, int64_t seq_len) {
  return per_head.reshape(Shape{per_head.size(0) / seq_len, seq_len, per_head.size(1), per_head.size(2)});
}

// [B, S, W] view of [T, W]: k_rope as the attention op reads it.
Tensor per_sequence_rows(const Tensor& rows, int64_t seq_len) {
  return rows.reshape(Shape{rows.size(0) / seq_len, seq_len, rows.size(1)});
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

MlaAttention::MlaAttention(const ModelConfig& model, const ParameterStore& store, int64_t layer, const RopeTable& rope,
                           TensorParallel tp)
    : heads_(0),
      nope_dim_(model.qk_nope_head_dim),
      rope_dim_(model.qk_rope_head_dim),
      value_dim_(model.v_head_dim),
      kv_lora_rank_(model.kv_lora_rank),
      norm_eps_(static_cast<float>(model.norm_eps)),
      softmax_scale_(static_cast<float>(
          attention_softmax_scale(model.qk_nope_head_dim + model.qk_rope_head_dim, mla_rope_settings(model)))),
      rope_(rope),
      tp_(tp) {
  HAI_CHECK(2 * rope.cos.size(1) == rope_dim_, "MLA layer {}: a RoPE table of {} columns for qk_rope_head_dim {}",
            layer, 2 * rope.cos.size(1), rope_dim_);
  std::string prefix = layer_prefix(layer) + "self_attn.";
  q_a_proj_ = Linear(store[prefix + "q_a_proj.weight"]);
  q_b_proj_ = Linear(store[prefix + "q_b_proj.weight"]);
  kv_a_proj_ = Linear(store[prefix + "kv_a_proj_with_mqa.weight"]);
  kv_b_proj_ = Linear(store[prefix + "kv_b_proj.weight"]);
  o_proj_ = Linear(store[prefix + "o_proj.weight"]);
  heads_ = q_b_proj_.out_features() / (nope_dim_ + rope_dim_);  // this tp rank's heads
  HAI_CHECK(heads_ * (nope_dim_ + rope_dim_) == q_b_proj_.out_features() &&
                kv_b_proj_.out_features() == heads_ * (nope_dim_ + value_dim_) &&
                o_proj_.in_features() == heads_ * value_dim_,
            "MLA layer {}: q_b_proj, kv_b_proj and o_proj hold different heads", layer);
  attention_dtype_ = o_proj_.compute_dtype() == DType::bf16 ? DType::bf16 : DType::f32;
  q_a_norm_ = &store[prefix + "q_a_layernorm.weight"];
  kv_a_norm_ = &store[prefix + "kv_a_layernorm.weight"];
}

void MlaAttention::forward(Context& ctx, const Tensor& out, const Tensor& x, const Tensor& positions,
                           int64_t seq_len) const {
  forward(ctx, out, to_compute_dtype(x, input_dtype()), positions, seq_len);
}

void MlaAttention::forward(Context& ctx, const Tensor& out, OwnedTensor&& x, const Tensor& positions,
                           int64_t seq_len) const {
  int64_t tokens = positions.numel();  // every tp rank's under sequence parallelism
  Device device = x.tensor().device();
  HAI_CHECK(seq_len > 0 && tokens % seq_len == 0, "MLA: {} tokens are not whole sequences of {}", tokens, seq_len);
  int64_t rows = x.tensor().size(0);  // this tp rank's under sequence parallelism
  HAI_CHECK(rows == sequence_rows(tp_, tokens), "MLA: {} rows of x for {} positions", rows, tokens);
  ctx.seq_len = seq_len;
  ctx.positions = positions;
  // read by q_a_proj and kv_a_proj_with_mqa alike
  Linear::PreparedInput input = q_a_proj_.prepare_input(std::move(x));
  forward_query(ctx, input, rows, device);
  forward_key_value(ctx, input, rows, device);
  ctx.x = std::move(input.saved);
  // NOTE: o comes out of the attention kernel in the dtype o_proj reads, which is the attention dtype (both follow
  // o_proj's compute dtype; bf16 in bf16 and fp8 training: no fp32 copy). o is kept once: when o_proj keeps o for
  // its weight gradient the attention backward reads that same tensor; where o_proj's input is another tensor
  // (FP8's quantisation, fp16's rounding) ctx.o holds o and backward_weight prepares o_proj's input from it again.
  OwnedTensor o(Shape{tokens, heads_, value_dim_}, o_proj_.input_dtype(), device);  // [T, H, d_v]
  ctx.lse = f32_tensor(Shape{tokens / seq_len, heads_, seq_len}, device);
  attention_forward_mla(per_sequence(o, seq_len), ctx.lse, per_sequence(ctx.q, seq_len),
                        per_sequence(ctx.kv, seq_len), per_sequence_rows(ctx.k_rope, seq_len), softmax_scale_);
  bool o_proj_keeps_o = !o_proj_.uses_fp8() && o.tensor().dtype() == o_proj_.compute_dtype();
  // the row-parallel o_proj's partial outputs summed over the tp ranks: the region's exit
  reduce_scatter_sequence(tp_, out, /*accumulate=*/false, [&](const Tensor& y, bool) {
    if (!o_proj_keeps_o) {
      o_proj_.forward(y, o_proj_.prepare_input(flatten_heads(o)));
      ctx.o = std::move(o);
    } else {
      o.reshape(Shape{tokens, heads_ * value_dim_});
      o_proj_.forward(y, std::move(o), ctx.o_input);
    }
  });
  if (!recompute_) return;
  if (recomputes_input()) ctx.x = OwnedTensor();
  for (OwnedTensor* dropped : {&ctx.q_latent_normed, &ctx.kv_latent_normed, &ctx.q, &ctx.kv}) *dropped = OwnedTensor();
}

void MlaAttention::forward_query(Context& ctx, const Linear::PreparedInput& input, int64_t rows,
                                 Device device) const {
  ctx.q_latent = f32_tensor(Shape{rows, q_a_proj_.out_features()}, device);  // [T_r, q_lora]
  q_a_proj_.forward(ctx.q_latent, input);
  project_query(ctx);
}

void MlaAttention::project_query(Context& ctx) const {
  const Tensor& q_latent = ctx.q_latent.tensor();  // [T_r, q_lora]
  Device device = q_latent.device();
  OwnedTensor q_latent_normed(q_latent.shape(), q_b_proj_.input_dtype(), device);  // [T_r, q_lora]
  ctx.q_latent_rstd = f32_tensor(Shape{q_latent.size(0)}, device);
  rmsnorm_forward(q_latent_normed, ctx.q_latent_rstd, q_latent, q_a_norm_->value, norm_eps_);
  // [T, q_lora] the region's input (gathered over the tp ranks under sequence parallelism)
  OwnedTensor region_input = all_gather_sequence(tp_, std::move(q_latent_normed));
  int64_t tokens = region_input.tensor().size(0);
  OwnedTensor q = f32_tensor(Shape{tokens, heads_, nope_dim_ + rope_dim_}, device);  // [T, H, d_qk]
  q_b_proj_.forward(flatten_heads(q), std::move(region_input), ctx.q_latent_normed);
  ctx.q = rotated(std::move(q), nope_dim_, attention_dtype_, ctx.positions, /*backward=*/false);
}

void MlaAttention::forward_key_value(Context& ctx, const Linear::PreparedInput& input, int64_t rows,
                                     Device device) const {
  OwnedTensor ckv = f32_tensor(Shape{rows, kv_lora_rank_ + rope_dim_}, device);  // [T_r, kv_lora + d_rope]
  kv_a_proj_.forward(ckv, input);
  rope_forward(ckv, ckv, local_sequence_rows(tp_, ctx.positions), rope_, kv_lora_rank_);
  ctx.kv_latent = f32_tensor(Shape{rows, kv_lora_rank_}, device);
  copy_columns(ctx.kv_latent, ckv, {.width = kv_lora_rank_});
  OwnedTensor k_rope(Shape{rows, rope_dim_}, attention_dtype_, device);  // [T_r, d_rope]
  copy_columns(k_rope, ckv, {.src_offset = kv_lora_rank_, .width = rope_dim_});
  ctx.k_rope = all_gather_sequence(tp_, std::move(k_rope));  // [T, d_rope]
  project_key_value(ctx);
}

void MlaAttention::project_key_value(Context& ctx) const {
  const Tensor& kv_latent = ctx.kv_latent.tensor();  // [T_r, kv_lora]
  Device device = kv_latent.device();
  OwnedTensor kv_latent_normed(kv_latent.shape(), kv_b_proj_.input_dtype(), device);  // [T_r, kv_lora]
  ctx.kv_latent_rstd = f32_tensor(Shape{kv_latent.size(0)}, device);
  rmsnorm_forward(kv_latent_normed, ctx.kv_latent_rstd, kv_latent, kv_a_norm_->value, norm_eps_);
  // [T, kv_lora] the region's input (gathered over the tp ranks under sequence parallelism)
  OwnedTensor region_input = all_gather_sequence(tp_, std::move(kv_latent_normed));
  int64_t tokens = region_input.tensor().size(0);
  // NOTE: the attention reads k_nope and v in kv's columns, so kv_b_proj rounds its output to the attention dtype
  // itself (FP8 GEMMs write bf16 as the bf16 ones do).
  // [T, H, d_nope + d_v]
  ctx.kv = OwnedTensor(Shape{tokens, heads_, nope_dim_ + value_dim_}, attention_dtype_, device);
  kv_b_proj_.forward(flatten_heads(ctx.kv), std::move(region_input), ctx.kv_latent_normed);
}

void MlaAttention::recompute(Context& ctx, OwnedTensor&& x) const {
  HAI_CHECK(recompute_ && x.tensor().defined() == recomputes_input(),
            "MLA: recompute() {} x under {} recomputation", x.tensor().defined() ? "given" : "without",
            recompute_ ? "selective" : "no");
  if (x.tensor().defined()) ctx.x = q_a_proj_.prepare_input(std::move(x)).saved;
  project_query(ctx);
  project_key_value(ctx);
}

OwnedTensor MlaAttention::rotated(OwnedTensor x, int64_t column_offset, DType dtype, const Tensor& positions,
                                  bool backward) const {
  auto rotate = backward ? rope_backward : rope_forward;
  if (dtype != DType::bf16) {
    rotate(x, x, positions, rope_, column_offset, {});
    return in_dtype(std::move(x), dtype);
  }
  OwnedTensor narrow(x.shape(), DType::bf16, x.tensor().device());
  rotate(narrow, x, positions, rope_, column_offset, {});
  return narrow;
}

void MlaAttention::backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out) const {
  // NOTE: a copy; the caller may reuse d_out.
  backward_input(ctx, d_x, to_compute_dtype(d_out, output_grad_dtype()));
}

void MlaAttention::backward_input(Context& ctx, const Tensor& d_x, OwnedTensor&& local_d_out) const {
  OwnedTensor d_out = all_gather_sequence(tp_, std::move(local_d_out));  // [T, hidden] the exit's backward
  int64_t tokens = d_out.tensor().size(0);
  int64_t qk_dim = nope_dim_ + rope_dim_;
  Device device = d_out.tensor().device();
  ctx.d_out = o_proj_.prepare_output_grad(std::move(d_out));
  // bf16 when the attention reads bf16, but fp32 with FP8 (the header says why)
  DType d_o_dtype = o_proj_.uses_fp8() ? DType::f32 : attention_dtype_;
  OwnedTensor d_o(Shape{tokens, heads_, value_dim_}, d_o_dtype, device);  // [T, H, d_v]
  o_proj_.backward_input(flatten_heads(d_o), ctx.d_out);
  OwnedTensor d_q(Shape{tokens, heads_, qk_dim}, attention_gradient_dtype(q_b_proj_), device);  // [T, H, d_qk]
  DType d_kv_dtype = attention_gradient_dtype(kv_b_proj_);
  OwnedTensor d_kv(Shape{tokens, heads_, nope_dim_ + value_dim_}, d_kv_dtype, device);  // [T, H, d_nope + d_v]
  OwnedTensor d_k_rope = f32_tensor(Shape{tokens, heads_, rope_dim_}, device);  // [T, H, d_rope]
  int64_t s = ctx.seq_len;
  attention_backward_mla({per_sequence(d_q, s), per_sequence(d_kv, s), per_sequence(d_k_rope, s)},
                         per_sequence(d_o, s), per_sequence(ctx.q, s), per_sequence(ctx.kv, s),
                         per_sequence_rows(ctx.k_rope, s), per_sequence(attention_output(ctx), s), ctx.lse,
                         softmax_scale_, ctx.positions, rope_);
  for (OwnedTensor* released : {&ctx.q, &ctx.kv, &ctx.k_rope, &ctx.lse}) *released = OwnedTensor();
  backward_query(ctx, d_x, std::move(d_q));
  backward_key_value(ctx, d_x, std::move(d_kv), d_k_rope);
}

DType MlaAttention::attention_gradient_dtype(const Linear& projection) {
  return projection.output_grad_dtype() == DType::bf16 ? DType::bf16 : DType::f32;
}

Tensor MlaAttention::attention_output(const Context& ctx) const {
  if (ctx.o.tensor().raw() != nullptr) return ctx.o.tensor();
  const Tensor& saved = ctx.o_input.tensor();  // [T, H * d_v]: o itself, kept for o_proj's weight gradient
  return saved.reshape(Shape{saved.size(0), heads_, value_dim_});
}

void MlaAttention::backward_query(Context& ctx, const Tensor& d_x, OwnedTensor d_q) const {
  int64_t rows = d_x.size(0);  // this rank's under sequence parallelism
  int64_t q_lora_rank = q_a_proj_.out_features();
  ctx.d_q = q_b_proj_.prepare_output_grad(flatten_heads(in_dtype(std::move(d_q), q_b_proj_.output_grad_dtype())));
  OwnedTensor d_q_latent_normed = f32_tensor(Shape{rows, q_lora_rank}, d_x.device());  // [T_r, q_lora]
  // from this rank's heads, summed over the tp ranks: the region's entry
  reduce_scatter_sequence(tp_, d_q_latent_normed, /*accumulate=*/false,
                          [&](const Tensor& partial, bool) { q_b_proj_.backward_input(partial, ctx.d_q); });
  OwnedTensor d_q_latent = f32_tensor(Shape{rows, q_lora_rank}, d_x.device());  // [T_r, q_lora]
  // q_a_proj's bf16 output gradient written by the norm beside the fp32 one (the same rounding as a cast)
  bool bf16_gradient = q_a_proj_.output_grad_dtype() == DType::bf16;
  OwnedTensor d_q_latent_bf16 = bf16_gradient ? OwnedTensor(d_q_latent.shape(), DType::bf16, d_x.device())
                                              : OwnedTensor();  // [T, q_lora]
  rmsnorm_backward(d_q_latent, q_a_norm_->grad, d_q_latent_normed, ctx.q_latent, q_a_norm_->value,
                   ctx.q_latent_rstd, {.weight_grad_beta = q_a_norm_->take_grad_beta(), .d_x_bf16 = d_q_latent_bf16});
  ctx.q_latent = OwnedTensor();
  ctx.q_latent_rstd = OwnedTensor();
  ctx.d_q_latent = q_a_proj_.prepare_output_grad(
      bf16_gradient ? std::move(d_q_latent_bf16) : in_dtype(std::move(d_q_latent), q_a_proj_.output_grad_dtype()));
  q_a_proj_.backward_input(d_x, ctx.d_q_latent);
}

void MlaAttention::backward_key_value(Context& ctx, const Tensor& d_x, OwnedTensor d_kv,
                                      const Tensor& d_k_rope) const {
  int64_t rows = d_x.size(0);  // this rank's under sequence parallelism
  ctx.d_kv = kv_b_proj_.prepare_output_grad(flatten_heads(in_dtype(std::move(d_kv), kv_b_proj_.output_grad_dtype())));
  OwnedTensor d_kv_latent_normed = f32_tensor(Shape{rows, kv_lora_rank_}, d_x.device());  // [T_r, kv_lora]
  // from this rank's heads, summed over the tp ranks: the region's entry
  reduce_scatter_sequence(tp_, d_kv_latent_normed, /*accumulate=*/false,
                          [&](const Tensor& partial, bool) { kv_b_proj_.backward_input(partial, ctx.d_kv); });
  OwnedTensor d_kv_latent = f32_tensor(Shape{rows, kv_lora_rank_}, d_x.device());  // [T_r, kv_lora]
  rmsnorm_backward(d_kv_latent, kv_a_norm_->grad, d_kv_latent_normed, ctx.kv_latent, kv_a_norm_->value,
                   ctx.kv_latent_rstd, {.weight_grad_beta = kv_a_norm_->take_grad_beta()});
  ctx.kv_latent = OwnedTensor();
  ctx.kv_latent_rstd = OwnedTensor();
  // [T_r, kv_lora + d_rope]
  OwnedTensor d_ckv = f32_tensor(Shape{rows, kv_lora_rank_ + rope_dim_}, d_x.device());
  copy_columns(d_ckv, d_kv_latent, {.width = kv_lora_rank_});
  // k_rope is shared by all heads: its gradient is the sum over them (this rank's, then over the tp ranks).
  OwnedTensor d_k_rope_sum = f32_tensor(Shape{rows, rope_dim_}, d_x.device());  // [T_r, d_rope]
  reduce_scatter_sequence(tp_, d_k_rope_sum, /*accumulate=*/false, [&](const Tensor& partial, bool) {
    sum_columns(partial, d_k_rope, {.width = rope_dim_});
  });
  copy_columns(d_ckv, d_k_rope_sum, {.dst_offset = kv_lora_rank_, .width = rope_dim_});
  ctx.d_ckv = kv_a_proj_.prepare_output_grad(rotated(std::move(d_ckv), kv_lora_rank_, kv_a_proj_.output_grad_dtype(),
                                                     local_sequence_rows(tp_, ctx.positions), /*backward=*/true));
  kv_a_proj_.backward_input(d_x, ctx.d_ckv, /*accumulate=*/true);
}

void MlaAttention::backward_weight(Context& ctx) const {
  // NOTE: the same quantisation (or rounding) of the same o as forward's: the same bits as keeping them.
  if (ctx.o_input.tensor().raw() == nullptr) ctx.o_input = o_proj_.prepare_input(flatten_heads(ctx.o)).saved;
  ctx.o = OwnedTensor();
  o_proj_.backward_weight(ctx.d_out, ctx.o_input);
  kv_b_proj_.backward_weight(ctx.d_kv, ctx.kv_latent_normed);
  kv_a_proj_.backward_weight(ctx.d_ckv, ctx.x);
  q_b_proj_.backward_weight(ctx.d_q, ctx.q_latent_normed);
  q_a_proj_.backward_weight(ctx.d_q_latent, ctx.x);
  ctx = Context{};
}

}  // namespace hai
