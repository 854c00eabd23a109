#include "model/decoder_layer.h"

#include <utility>

#include "framework/device/elementwise.h"
#include "framework/device/rmsnorm.h"
#include "model/linear.h"
#include "model/parameters.h"

namespace hai {
namespace {

OwnedTensor like(const Tensor& x) { return OwnedTensor(x.shape(), DType::f32, x.device()); }

OwnedTensor copy_of(const Tensor& x) {
  OwnedTensor copy = like(x);
  copy_tensor_async(copy, x);
  return copy;
}

// [x's shape] bf16 for a norm to write x's rounding into, when x's reader keeps x in reader_dtype bf16; else empty.
OwnedTensor bf16_copy_for(DType reader_dtype, const Tensor& x) {
  return reader_dtype == DType::bf16 ? OwnedTensor(x.shape(), DType::bf16, x.device()) : OwnedTensor();
}

}  // namespace

DecoderLayer::DecoderLayer(const ModelConfig& model, const ParameterStore& store, int64_t layer,
                           const RopeTable& rope, ExpertExchange* experts, TensorParallel tp)
    : input_norm_(store[layer_prefix(layer) + "input_layernorm.weight"]),
      post_attention_norm_(store[layer_prefix(layer) + "post_attention_layernorm.weight"]),
      norm_eps_(static_cast<float>(model.norm_eps)),
      attention_(model, store, layer, rope, tp) {
  if (is_moe_layer(model, layer)) {
    moe_.emplace(model, store, layer, experts, tp);
  } else {
    dense_.emplace(store, layer_prefix(layer) + "mlp.", tp);
  }
}

void DecoderLayer::forward(Context& ctx, const Tensor& out, const Tensor& x, const Tensor& positions,
                           int64_t seq_len) const {
  forward(ctx, out, copy_of(x), positions, seq_len);
}

void DecoderLayer::forward(Context& ctx, const Tensor& out, OwnedTensor&& input, const Tensor& positions,
                           int64_t seq_len) const {
  ctx.input = std::move(input);
  ctx.positions = positions;
  ctx.seq_len = seq_len;
  forward_from_input(ctx, out);
  if (recompute_ == RecomputeMode::full) release_all_but_input(ctx);
}

void DecoderLayer::forward_from_input(Context& ctx, const Tensor& out) const {
  mark_phase(profiler_, "forward.attention");
  const Tensor& x = ctx.input.tensor();  // [T, H]
  int64_t tokens = x.size(0);
  ctx.attention_rstd = OwnedTensor(Shape{tokens}, DType::f32, x.device());
  ctx.residual = like(x);
  {
    OwnedTensor attention_input(x.shape(), attention_.input_dtype(), x.device());  // [T, H] input_layernorm(x)
    rmsnorm_forward(attention_input, ctx.attention_rstd, x, input_norm_.value, norm_eps_);
    attention_.forward(ctx.attention, ctx.residual, std::move(attention_input), ctx.positions, ctx.seq_len);
  }

  mark_phase(profiler_, moe_ ? "forward.moe_routing" : "forward.dense_mlp");
  ctx.mlp_rstd = OwnedTensor(Shape{tokens}, DType::f32, x.device());
  // [T, H] post_attention_layernorm(h); fp32 for the MoE gate
  OwnedTensor mlp_input(x.shape(), moe_ ? DType::f32 : dense_->input_dtype(), x.device());
  // [T, H] the same rounded to bf16 for the MoE's experts when they read that, else empty
  OwnedTensor mlp_input_bf16 =
      moe_ && moe_->takes_bf16_input() ? OwnedTensor(x.shape(), DType::bf16, x.device()) : OwnedTensor();
  // h = attention output + x, in place in ctx.residual, and its norm (and that rounding) in one pass
  add_rmsnorm_forward(ctx.residual, mlp_input, ctx.mlp_rstd, ctx.residual, x, post_attention_norm_.value, norm_eps_,
                      mlp_input_bf16);
  // out = h + mlp(...): the MoE's combine starts from h (no pass of its own over [T, H]); the dense MLP adds it after.
  if (moe_) {
    moe_->forward(ctx.moe, out, std::move(mlp_input), ctx.seq_len, ctx.residual, std::move(mlp_input_bf16));
  } else {
    dense_->forward(ctx.dense, out, std::move(mlp_input));
    add_scaled(out, ctx.residual);
  }
}

void DecoderLayer::release_all_but_input(Context& ctx) const {
  MoeLayer::Context routing;  // what the caller reads after forward: accumulate_load, accumulate_balance_loss
  routing.topk_indices = std::move(ctx.moe.topk_indices);
  routing.sequence_balance_loss = std::move(ctx.moe.sequence_balance_loss);
  ctx.attention_rstd = OwnedTensor();
  ctx.attention = MlaAttention::Context{};
  ctx.residual = OwnedTensor();
  ctx.mlp_rstd = OwnedTensor();
  ctx.dense = FeedForward::Context{};
  ctx.moe = std::move(routing);
}

void DecoderLayer::recompute_mlp_input(Context& ctx) const {
  if (dense_ && !dense_->recomputes_input()) return;  // FP8: its FP8 copy was kept
  const Tensor& h = ctx.residual.tensor();  // [T, H]
  // [T, H] post_attention_layernorm(h) as forward wrote it: fp32 for the MoE gate, else in the dense MLP's dtype
  OwnedTensor mlp_input(h.shape(), moe_ ? DType::f32 : dense_->input_dtype(), h.device());
  OwnedTensor rstd(Shape{h.size(0)}, DType::f32, h.device());  // [T] ctx.mlp_rstd again
  rmsnorm_forward(mlp_input, rstd, h, post_attention_norm_.value, norm_eps_);
  if (!moe_) return dense_->recompute_input(ctx.dense, std::move(mlp_input));
  // [T, H] its bf16 rounding, the bits of the norm's out_bf16 in forward
  OwnedTensor mlp_input_bf16 =
      moe_->takes_bf16_input() ? to_compute_dtype(mlp_input, DType::bf16) : OwnedTensor();
  moe_->recompute_input(ctx.moe, std::move(mlp_input), std::move(mlp_input_bf16));
}

void DecoderLayer::recompute_attention_input(Context& ctx) const {
  if (!attention_.recomputes_input()) return attention_.recompute(ctx.attention, OwnedTensor());
  const Tensor& x = ctx.input.tensor();                                          // [T, H]
  OwnedTensor attention_input(x.shape(), attention_.input_dtype(), x.device());  // [T, H] input_layernorm(x)
  OwnedTensor rstd(Shape{x.size(0)}, DType::f32, x.device());                    // [T] ctx.attention_rstd again
  rmsnorm_forward(attention_input, rstd, x, input_norm_.value, norm_eps_);
  attention_.recompute(ctx.attention, std::move(attention_input));
}

bool DecoderLayer::takes_bf16_output_grad() const {
  return moe_ ? moe_->takes_bf16_output_grad() : dense_->output_grad_dtype() == DType::bf16;
}

void DecoderLayer::backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out, float balance_loss_grad,
                                  OwnedTensor d_out_bf16, const Tensor& d_x_bf16) const {
  if (recompute_ == RecomputeMode::full) {
    OwnedTensor discarded = like(ctx.input);  // [T, H] the layer's output again
    forward_from_input(ctx, discarded);
  }
  if (recompute_ == RecomputeMode::selective) recompute_mlp_input(ctx);
  // MLP branch: d_h = d_out + norm_backward(mlp_backward(d_out)).
  mark_phase(profiler_, moe_ ? "backward_input.moe_experts" : "backward_input.dense_mlp");
  OwnedTensor d_mlp_input = like(d_out);
  if (moe_) {
    moe_->backward_input(ctx.moe, d_mlp_input, d_out, balance_loss_grad, std::move(d_out_bf16));
  } else if (d_out_bf16.tensor().defined()) {
    HAI_CHECK(takes_bf16_output_grad(), "decoder layer: a bf16 output gradient handed to an MLP that keeps {}",
              dtype_name(dense_->output_grad_dtype()));
    dense_->backward_input(ctx.dense, d_mlp_input, std::move(d_out_bf16));
  } else {
    dense_->backward_input(ctx.dense, d_mlp_input, d_out);
  }
  OwnedTensor d_residual = like(d_out);  // [T, H] d_h
  // [T, H] d_h rounded to bf16 when o_proj keeps its output gradient so, else empty
  OwnedTensor d_residual_bf16 = bf16_copy_for(attention_.output_grad_dtype(), d_out);
  rmsnorm_backward(d_residual, post_attention_norm_.grad, d_mlp_input, ctx.residual, post_attention_norm_.value,
                   ctx.mlp_rstd,
                   {.weight_grad_beta = post_attention_norm_.take_grad_beta(),
                    .residual_grad = d_out,
                    .d_x_bf16 = d_residual_bf16});
  ctx.residual = OwnedTensor();

  if (recompute_ == RecomputeMode::selective) recompute_attention_input(ctx);
  // Attention branch: d_x = d_h + norm_backward(attention_backward(d_h)).
  mark_phase(profiler_, "backward_input.attention");
  OwnedTensor d_attention_input = like(d_out);
  if (d_residual_bf16.tensor().defined()) {
    attention_.backward_input(ctx.attention, d_attention_input, std::move(d_residual_bf16));
  } else {
    attention_.backward_input(ctx.attention, d_attention_input, d_residual);
  }
  rmsnorm_backward(d_x, input_norm_.grad, d_attention_input, ctx.input, input_norm_.value, ctx.attention_rstd,
                   {.weight_grad_beta = input_norm_.take_grad_beta(),
                    .residual_grad = d_residual,
                    .d_x_bf16 = d_x_bf16});
  ctx.input = OwnedTensor();
}

void DecoderLayer::backward_weight(Context& ctx) const {
  mark_phase(profiler_, "backward_weight.attention");
  attention_.backward_weight(ctx.attention);
  if (moe_) {
    moe_->backward_weight(ctx.moe);  // marks its parts
  } else {
    mark_phase(profiler_, "backward_weight.dense_mlp");
    dense_->backward_weight(ctx.dense);
  }
}

void DecoderLayer::set_recompute(RecomputeMode mode) {
  recompute_ = mode;
  bool selective = mode == RecomputeMode::selective;
  attention_.set_recompute(selective);
  if (dense_) dense_->set_recompute(selective);
  if (moe_) moe_->set_recompute(selective);
}

void DecoderLayer::set_profiler(StepProfiler* profiler) {
  profiler_ = profiler;
  if (moe_) moe_->set_profiler(profiler);
}

}  // namespace hai
