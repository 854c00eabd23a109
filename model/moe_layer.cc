#include "model/moe_layer.h"

#include <utility>

#include "framework/device/elementwise.h"
#include "framework/device/expert_load.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/fp8_rows.h"
#include "framework/device/gemm.h"
#include "model/in_dtype.h"
#include "model/linear.h"
#include "model/parameters.h"
#include "model/sequence_balance_loss.h"

namespace hai {

MoeLayer::MoeLayer(const ModelConfig& config, const ParameterStore& store, int64_t layer, ExpertExchange* experts,
                   TensorParallel tp)
    : routed_experts_(config.moe.routed_experts),
      experts_per_token_(config.moe.experts_per_token),
      router_options_{.groups = config.moe.groups,
                      .groups_per_token = config.moe.groups_per_token,
                      .routed_scaling_factor = static_cast<float>(config.moe.routed_scaling_factor)},
      balance_loss_alpha_(static_cast<float>(config.moe.balance_loss_alpha)),
      gate_(&store[layer_prefix(layer) + "mlp.gate.weight"]),
      bias_(&store[layer_prefix(layer) + "mlp.gate.e_score_correction_bias"]),
      dispatcher_(make_token_dispatcher(config.moe.routed_experts, experts ? &experts->group() : nullptr)),
      fp8_pow2_scales_(store.fp8_options().pow2_activation_scales),
      experts_(store, layer_prefix(layer) + "mlp.experts.", experts ? experts->local_experts() : routed_experts_,
               experts ? experts->first_local_expert() : 0) {
  HAI_CHECK(experts_.uses_fp8() == store.fp8_options().enabled,
            "MoE layer {}: the routed experts {} FP8 weights in {} training", layer,
            experts_.uses_fp8() ? "have" : "lack", store.fp8_options().enabled ? "fp8" : "non-fp8");
  HAI_CHECK(!experts || experts->routed_experts() == routed_experts_,
            "MoE layer {}: the expert exchange splits {} experts, the model has {}", layer,
            experts ? experts->routed_experts() : 0, routed_experts_);
  check_shape(gate_->value, Shape{routed_experts_, config.hidden_size}, "MoE gate weight");
  check_shape(bias_->value, Shape{routed_experts_}, "MoE gate bias");
  if (config.moe.shared_experts > 0) shared_.emplace(store, layer_prefix(layer) + "mlp.shared_experts.", tp);
  tp_ = tp;
  // NOTE: under sequence parallelism each tp rank routes its own tokens: no expert sees a token twice.
  tp_size_ = tp.splits_sequence() ? 1 : tp.size();
}

void MoeLayer::forward(Context& ctx, const Tensor& out, const Tensor& x, int64_t seq_len,
                       const Tensor& residual) const {
  forward(ctx, out, to_compute_dtype(x, DType::f32), seq_len, residual);
}

void MoeLayer::forward(Context& ctx, const Tensor& out, OwnedTensor&& x, int64_t seq_len, const Tensor& residual,
                       OwnedTensor x_bf16) const {
  ctx.input = std::move(x);  // [T, H] fp32
  const Tensor& input = ctx.input.tensor();
  route(ctx, input, seq_len);
  mark_phase(profiler_, "forward.moe_experts");
  OwnedTensor tokens = forward_tokens(input, std::move(x_bf16));  // [T, H], or empty: x itself
  OwnedTensor outputs = experts_.uses_fp8()
                            ? compute_experts_fp8(ctx, input)
                            : compute_experts(ctx, tokens.tensor().defined() ? tokens.tensor() : input);
  // NOTE: under selective recomputation the outputs are not kept: backward_input recomputes them (recompute_outputs).
  dispatcher_->combine(ctx.dispatch, out, std::move(outputs), ctx.topk_weights, residual,
                       /*keep_outputs=*/!recompute_);  // [T, H]
  if (shared_) {
    // out += the shared expert's output, added by its down projection's GEMM (the same fp32 sum as an add).
    mark_phase(profiler_, "forward.shared_expert");
    ctx.shared.emplace();
    if (shared_reads_expert_tokens()) {
      shared_->forward(*ctx.shared, out, std::move(tokens), /*accumulate=*/true);
    } else {
      shared_->forward(*ctx.shared, out, input, /*accumulate=*/true);
    }
  }
  if (recompute_) ctx.input = OwnedTensor();
}

void MoeLayer::set_recompute(bool selective) {
  recompute_ = selective;
  experts_.set_recompute(selective);
  if (shared_) shared_->set_recompute(selective);
}

void MoeLayer::recompute_input(Context& ctx, OwnedTensor&& x, OwnedTensor x_bf16) const {
  HAI_CHECK(recompute_, "MoE layer: an input handed back to a layer that keeps its own");
  ctx.input = std::move(x);  // [T, H] fp32
  if (!shared_ || !shared_->recomputes_input()) return;
  if (shared_reads_expert_tokens()) {
    shared_->recompute_input(*ctx.shared, forward_tokens(ctx.input, std::move(x_bf16)));
  } else {
    shared_->recompute_input(*ctx.shared, ctx.input.tensor());
  }
}

void MoeLayer::route(Context& ctx, const Tensor& x, int64_t seq_len) const {
  const int64_t tokens = x.size(0);  // this tp rank's under sequence parallelism
  const int64_t all_tokens = tp_.splits_sequence() ? tokens * tp_.size() : tokens;
  HAI_CHECK(seq_len > 0 && all_tokens % seq_len == 0, "MoE layer: {} tokens are not whole sequences of {}",
            all_tokens, seq_len);
  const int64_t sequences = all_tokens / seq_len;
  const Device device = x.device();
  OwnedTensor logits(Shape{tokens, routed_experts_}, DType::f32, device);  // [T, E]
  // NOTE: the gate is kept in fp32 in every precision mode (the FP8 recipe), so it reads the master value.
  gemm(logits, x, gate_->value, {.transpose_b = true});
  ctx.scores = OwnedTensor(Shape{tokens, routed_experts_}, DType::f32, device);           // [T, E]
  ctx.topk_indices = OwnedTensor(Shape{tokens, experts_per_token_}, DType::i32, device);  // [T, K]
  ctx.topk_weights = OwnedTensor(Shape{tokens, experts_per_token_}, DType::f32, device);  // [T, K]
  router_forward(ctx.scores, ctx.topk_indices, ctx.topk_weights, logits, bias_->value, router_options_);
  ctx.expert_fraction = OwnedTensor(Shape{sequences, routed_experts_}, DType::f32, device);  // [N, E]
  ctx.sequence_balance_loss = OwnedTensor(Shape{sequences}, DType::f32, device);           // [N]
  sequence_balance_loss_forward(tp_, ctx.sequence_balance_loss, ctx.expert_fraction, ctx.scores, ctx.topk_indices,
                                balance_loss_alpha_);
}

OwnedTensor MoeLayer::expert_tokens(const Tensor& x) const {
  if (experts_.uses_fp8() || x.dtype() == experts_.compute_dtype()) return {};
  return to_compute_dtype(x, experts_.compute_dtype());
}

bool MoeLayer::takes_bf16_input() const {
  return !experts_.uses_fp8() && experts_.compute_dtype() == DType::bf16;
}

OwnedTensor MoeLayer::forward_tokens(const Tensor& x, OwnedTensor x_bf16) const {
  if (!x_bf16.tensor().defined()) return expert_tokens(x);
  HAI_CHECK(takes_bf16_input(), "MoE layer: a bf16 copy of its input handed to experts that do not read one");
  check_shape(x_bf16, x.shape(), "MoE layer's bf16 input");
  check_dtype(x_bf16, DType::bf16, "MoE layer's bf16 input");
  return x_bf16;
}

bool MoeLayer::shared_reads_expert_tokens() const {
  return shared_ && !experts_.uses_fp8() && experts_.compute_dtype() != DType::f32 &&
         shared_->input_dtype() == experts_.compute_dtype();
}

OwnedTensor MoeLayer::compute_experts(Context& ctx, const Tensor& rows) const {
  dispatcher_->route(ctx.dispatch, ctx.topk_indices);
  OwnedTensor local = dispatcher_->dispatch(ctx.dispatch, rows);  // [R, H] by local expert
  OwnedTensor outputs(local.shape(), saved_activation_dtype(experts_.compute_dtype()), rows.device());  // [R, H]
  experts_.forward(ctx.experts, outputs, local, dispatcher_->local_offsets(ctx.dispatch), /*keep_input=*/false);
  // NOTE: under selective recomputation W dispatches the rows again (experts_input_again) instead.
  if (!recompute_) dispatcher_->keep_for_weight_gradient(ctx.dispatch, std::move(local));
  return outputs;
}

OwnedTensor MoeLayer::compute_experts_fp8(Context& ctx, const Tensor& x) const {
  Fp8Rows tokens = quantize_rows(x, fp8_pow2_scales_);  // [T, H]
  dispatcher_->route(ctx.dispatch, ctx.topk_indices);
  Fp8Rows local = dispatcher_->dispatch_fp8(ctx.dispatch, tokens);  // [R, H] by local expert
  // NOTE: the weight gradient's 128-token tiles hold one source rank's rows each, as at ep = 1.
  TokenDispatcher::SourceSegments segments = dispatcher_->source_segments(ctx.dispatch);
  ctx.experts.token_segments = segments.segments;
  ctx.experts.padded_segments = segments.padded_segments;
  ctx.experts.padded_expert_offsets = segments.padded_expert_offsets;
  OwnedTensor outputs(local.values.shape(), saved_activation_dtype(experts_.compute_dtype()), x.device());  // [R, H]
  experts_.forward_fp8(ctx.experts, outputs, local.matrix(), dispatcher_->local_offsets(ctx.dispatch), {});
  if (!recompute_) dispatcher_->keep_for_weight_gradient(ctx.dispatch, std::move(local));
  return outputs;
}

void MoeLayer::backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out, float balance_loss_grad,
                              OwnedTensor d_out_bf16) const {
  bool handed_bf16 = d_out_bf16.tensor().defined();
  HAI_CHECK(!handed_bf16 || takes_bf16_output_grad(),
            "MoE layer: a bf16 copy of its output gradient handed to a layer that does not read one");
  const int64_t tokens = d_out.size(0), hidden = d_out.size(1);
  const Device device = d_out.device();
  OwnedTensor d_topk_weights(Shape{tokens, experts_per_token_}, DType::f32, device);  // [T, K]
  OwnedTensor d_out_per_tp_rank;  // [T, H] d_out / tp (header: tensor parallelism)
  if (tp_size_ > 1) {
    d_out_per_tp_rank = to_compute_dtype(d_out, DType::f32);
    scale_tensor(d_out_per_tp_rank, 1.0f / static_cast<float>(tp_size_));
  }
  if (recompute_) recompute_outputs(ctx, hidden, device);
  // NOTE: in the dtype the experts compute in (bf16 in bf16 training): they keep it for W.
  OwnedTensor d_outputs = dispatcher_->combine_backward(ctx.dispatch, d_topk_weights,
                                                        tp_size_ > 1 ? d_out_per_tp_rank.tensor() : d_out,
                                                        ctx.topk_weights,
                                                        saved_activation_dtype(experts_.compute_dtype()));  // [R, H]
  OwnedTensor d_local(Shape{d_outputs.tensor().size(0), hidden}, DType::f32, device);  // [R, H]
  experts_.backward_input(ctx.experts, d_local, std::move(d_outputs));
  if (tp_size_ > 1) {
    scale_tensor(d_topk_weights, static_cast<float>(tp_size_));
    scale_tensor(d_local, static_cast<float>(tp_size_));
  }
  dispatcher_->dispatch_backward(ctx.dispatch, d_x, std::move(d_local));
  if (shared_) {
    mark_phase(profiler_, "backward_input.shared_expert");
    if (handed_bf16) {
      shared_->backward_input(*ctx.shared, d_x, std::move(d_out_bf16), /*accumulate=*/true);
    } else {
      shared_->backward_input(*ctx.shared, d_x, d_out, /*accumulate=*/true);
    }
  }
  mark_phase(profiler_, "backward_input.moe_routing");
  route_backward(ctx, d_x, d_topk_weights, balance_loss_grad);
}

void MoeLayer::recompute_outputs(Context& ctx, int64_t hidden, Device device) const {
  Shape rows{dispatcher_->local_rows(ctx.dispatch), hidden};
  OwnedTensor outputs(rows, saved_activation_dtype(experts_.compute_dtype()), device);  // [R, H] as forward's
  experts_.recompute_output(ctx.experts, outputs);
  dispatcher_->return_outputs_again(ctx.dispatch, std::move(outputs));
}

void MoeLayer::route_backward(Context& ctx, const Tensor& d_x, const Tensor& d_topk_weights,
                              float balance_loss_grad) const {
  const int64_t sequences = ctx.sequence_balance_loss.numel();
  ctx.d_logits = OwnedTensor(ctx.scores.shape(), DType::f32, d_x.device());  // [T, E]
  router_backward(ctx.d_logits, d_topk_weights, ctx.scores, ctx.topk_indices, router_options_.routed_scaling_factor);
  // The layer's balance loss is the mean over its sequences, so each sequence's loss gets 1/N of the gradient.
  OwnedTensor d_sequence_loss(Shape{sequences}, DType::f32, d_x.device());  // [N]
  fill_tensor(d_sequence_loss, balance_loss_grad / static_cast<float>(sequences));
  sequence_balance_loss_backward(tp_, ctx.d_logits, d_sequence_loss, ctx.expert_fraction, ctx.scores,
                                 balance_loss_alpha_);
  gemm(d_x, ctx.d_logits, gate_->value, {.beta = 1.0f});
}

OwnedTensor MoeLayer::experts_input_again(Context& ctx) const {
  if (experts_.uses_fp8()) {
    Fp8Rows local =
        dispatcher_->dispatch_fp8_again(ctx.dispatch, [&] { return quantize_rows(ctx.input, fp8_pow2_scales_); });
    OwnedTensor input(local.values.shape(), experts_.compute_dtype(), ctx.input.tensor().device());  // [R, H]
    dequantize_1x128(input, local.values, local.scales);
    return input;
  }
  OwnedTensor tokens;  // [T, H], or empty: the shared expert's saved input or x itself
  return dispatcher_->dispatch_again(ctx.dispatch, [&]() -> Tensor {
    // NOTE: under sequence parallelism the shared expert's saved input holds every tp rank's rows.
    if (shared_reads_expert_tokens() && !tp_.splits_sequence()) return ctx.shared->input.tensor();
    tokens = expert_tokens(ctx.input);
    return tokens.tensor().defined() ? tokens.tensor() : ctx.input.tensor();
  });
}

void MoeLayer::backward_weight(Context& ctx) const {
  mark_phase(profiler_, "backward_weight.moe_routing");
  gemm(gate_->grad, ctx.d_logits, ctx.input, {.transpose_a = true, .beta = gate_->take_grad_beta()});
  mark_phase(profiler_, "backward_weight.moe_experts");
  OwnedTensor input = experts_input_again(ctx);  // [R, H]
  experts_.backward_weight(ctx.experts, &input.tensor());
  ctx.dispatch = TokenDispatcher::Context();
  if (shared_) {
    mark_phase(profiler_, "backward_weight.shared_expert");
    shared_->backward_weight(*ctx.shared);
  }
  ctx.input = OwnedTensor();
  ctx.d_logits = OwnedTensor();
}

void MoeLayer::accumulate_load(const Context& ctx, const Tensor& load) const {
  check_shape(load, Shape{routed_experts_}, "MoE expert load");
  accumulate_expert_load(load, ctx.topk_indices);
}

void MoeLayer::accumulate_balance_loss(const Context& ctx, const Tensor& total) const {
  const int64_t sequences = ctx.sequence_balance_loss.numel();
  accumulate_sum(total, ctx.sequence_balance_loss, 1.0f / static_cast<float>(sequences));
}

}  // namespace hai
