#include "model/moe_layer.h"

#include <utility>
#include <vector>

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
namespace {

// offsets on the host -> an i32 tensor of them on `device`.
OwnedTensor device_offsets(const std::vector<int64_t>& offsets, Device device) {
  OwnedTensor host(Shape{static_cast<int64_t>(offsets.size())}, DType::i32);
  for (size_t i = 0; i < offsets.size(); ++i) host.data<int32_t>()[i] = static_cast<int32_t>(offsets[i]);
  OwnedTensor result(host.tensor().shape(), DType::i32, device);
  copy_tensor(result, host);
  return result;
}

}  // namespace

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
      exchange_(experts),
      fp8_dispatch_(store.fp8_options().enabled),
      fp8_pow2_scales_(store.fp8_options().pow2_activation_scales),
      experts_(store, layer_prefix(layer) + "mlp.experts.", experts ? experts->local_experts() : routed_experts_,
               experts ? experts->first_local_expert() : 0) {
  HAI_CHECK(experts_.uses_fp8() == fp8_dispatch_, "MoE layer {}: the routed experts {} FP8 weights in {} training",
            layer, experts_.uses_fp8() ? "have" : "lack", fp8_dispatch_ ? "fp8" : "non-fp8");
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
  ctx.plan = std::make_unique<OwnedRoutingPlan>(input.size(0), experts_per_token_, routed_experts_, input.device());
  build_routing_plan(*ctx.plan, ctx.topk_indices);
  // NOTE: under FP8 the experts read the rows quantised as the dispatch quantises them; expert_tokens is then only
  // the weight gradient's recomputed input.
  OwnedTensor tokens = forward_tokens(input, std::move(x_bf16));  // [T, H], or empty: x itself
  if (fp8_dispatch_ && !exchange_) {
    compute_local_experts_fp8(ctx, input);
  } else {
    compute_experts(ctx, sorted_rows(ctx, input, tokens));  // [T * K, H]
  }
  // NOTE: rounded before the combine reads them (after the exchange, which moves fp32 rows), as the experts write
  // them without one: the same bits with and without expert parallelism.
  ctx.expert_output = in_dtype(std::move(ctx.expert_output), saved_activation_dtype(experts_.compute_dtype()));
  combine(ctx, out, residual);
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
  if (exchange_) return {};
  if (fp8_dispatch_) {
    // The rows as the dispatch quantises them, dequantised straight into the compute dtype (round_trip_fp8_rows's
    // values, rounded as to_compute_dtype rounds them).
    Fp8Rows rows = quantize_rows(x, fp8_pow2_scales_);                     // [T, H]
    OwnedTensor tokens(x.shape(), experts_.compute_dtype(), x.device());  // [T, H]
    dequantize_1x128(tokens, rows.values, rows.scales);
    return tokens;
  }
  if (x.dtype() == experts_.compute_dtype()) return {};
  return to_compute_dtype(x, experts_.compute_dtype());
}

bool MoeLayer::takes_bf16_input() const {
  return !exchange_ && !fp8_dispatch_ && experts_.compute_dtype() == DType::bf16;
}

OwnedTensor MoeLayer::forward_tokens(const Tensor& x, OwnedTensor x_bf16) const {
  if (!x_bf16.tensor().defined()) return fp8_dispatch_ ? OwnedTensor() : expert_tokens(x);
  HAI_CHECK(takes_bf16_input(), "MoE layer: a bf16 copy of its input handed to experts that do not read one");
  check_shape(x_bf16, x.shape(), "MoE layer's bf16 input");
  check_dtype(x_bf16, DType::bf16, "MoE layer's bf16 input");
  return x_bf16;
}

bool MoeLayer::shared_reads_expert_tokens() const {
  return shared_ && !exchange_ && !fp8_dispatch_ && experts_.compute_dtype() != DType::f32 &&
         shared_->input_dtype() == experts_.compute_dtype();
}

OwnedTensor MoeLayer::sorted_rows(const Context& ctx, const Tensor& x, const OwnedTensor& tokens) const {
  return permuted(ctx, tokens.tensor().raw() != nullptr ? tokens.tensor() : x);
}

OwnedTensor MoeLayer::permuted(const Context& ctx, const Tensor& rows) const {
  OwnedTensor x_sorted(Shape{rows.size(0) * experts_per_token_, rows.size(1)}, rows.dtype(), rows.device());
  permute_tokens(x_sorted, rows, *ctx.plan);  // [T * K, H] <- [T, H]
  return x_sorted;
}

void MoeLayer::compute_experts(Context& ctx, const Tensor& x_sorted) const {
  // NOTE: without an exchange the down projection writes the expert outputs in the dtype the combine's backward
  // keeps them in (bf16 in bf16 training), and the combine reads those.
  DType output_dtype = exchange_ ? DType::f32 : saved_activation_dtype(experts_.compute_dtype());
  ctx.expert_output = OwnedTensor(x_sorted.shape(), output_dtype, x_sorted.device());  // [T * K, H]
  if (!exchange_) {
    experts_.forward(ctx.experts, ctx.expert_output, x_sorted, ctx.plan->plan().expert_offsets,
                     /*keep_input=*/false);
    return;
  }
  mark_phase(profiler_, "forward.expert_exchange");
  route_to_owners(ctx);
  Shape local_rows{ctx.route.received_total(), x_sorted.size(1)};
  OwnedTensor output_local(local_rows, DType::f32, x_sorted.device());  // [R, H]
  if (fp8_dispatch_) {
    Fp8Rows rows = exchange_->dispatch_fp8(ctx.route, x_sorted, fp8_pow2_scales_);  // [R, H]
    // The weight gradient's input: the rows as they arrived, dequantised into the compute dtype.
    OwnedTensor x_local(local_rows, experts_.compute_dtype(), x_sorted.device());  // [R, H] by local expert
    dequantize_1x128(x_local, rows.values, rows.scales);
    mark_phase(profiler_, "forward.moe_experts");
    experts_.forward_fp8(ctx.experts, output_local, rows.matrix(), ctx.local_offsets, std::move(x_local));
  } else {
    OwnedTensor x_local(local_rows, DType::f32, x_sorted.device());  // [R, H] by local expert
    exchange_->dispatch(ctx.route, x_local, x_sorted);
    mark_phase(profiler_, "forward.moe_experts");
    experts_.forward(ctx.experts, output_local, x_local, ctx.local_offsets);
  }
  mark_phase(profiler_, "forward.expert_exchange");
  exchange_->combine(ctx.route, ctx.expert_output, output_local);
  mark_phase(profiler_, "forward.moe_experts");
}

void MoeLayer::compute_local_experts_fp8(Context& ctx, const Tensor& x) const {
  const int64_t rows = x.size(0) * experts_per_token_;
  DType output_dtype = saved_activation_dtype(experts_.compute_dtype());
  ctx.expert_output = OwnedTensor(Shape{rows, x.size(1)}, output_dtype, x.device());  // [T * K, H]
  // NOTE: quantisation is per row and the permutation a copy, so these are the bits of quantising the sorted rows.
  Fp8Rows tokens = quantize_rows(x, fp8_pow2_scales_);  // [T, H]
  Fp8Rows sorted(rows, x.size(1), x.device());          // [T * K, H]
  permute_tokens(sorted.values, tokens.values, *ctx.plan);
  permute_tokens(sorted.scales, tokens.scales, *ctx.plan);
  experts_.forward_fp8(ctx.experts, ctx.expert_output, sorted.matrix(), ctx.plan->plan().expert_offsets,
                       /*kept_input=*/{});
}

void MoeLayer::route_to_owners(Context& ctx) const {
  // NOTE: the exchange sizes its buffers on the host, so on the GPU the row counts are read back here: one
  // synchronisation per MoE layer and micro-batch under expert parallelism.
  OwnedTensor expert_offsets = host_copy(ctx.plan->plan().expert_offsets);  // [E + 1] i32
  const int32_t* offsets = expert_offsets.data<int32_t>();
  std::vector<int64_t> expert_rows;  // [E]
  for (int64_t expert = 0; expert < routed_experts_; ++expert) {
    expert_rows.push_back(offsets[expert + 1] - offsets[expert]);
  }
  ctx.route = exchange_->route(expert_rows);
  Device device = ctx.plan->plan().expert_offsets.device();
  ctx.local_offsets = device_offsets(ctx.route.local_offsets, device);  // [local + 1]
  if (experts_.uses_fp8()) split_by_source(ctx, device);
}

// The local rows of each expert by source rank (in the local order: expert by expert, rank 0 first), and the same
// padded to 128 rows a segment: the FP8 weight gradient's tiles then hold one rank's tokens, as at ep 1.
void MoeLayer::split_by_source(Context& ctx, Device device) const {
  const int64_t sources = exchange_->ranks(), local = exchange_->local_experts();
  std::vector<int64_t> segments{0}, padded_segments{0}, padded_experts{0};
  for (int64_t expert = 0; expert < local; ++expert) {
    for (int64_t source = 0; source < sources; ++source) {
      int64_t rows = ctx.route.received[static_cast<size_t>(source * local + expert)];
      segments.push_back(segments.back() + rows);
      padded_segments.push_back(padded_segments.back() + (rows + kFp8TileSize - 1) / kFp8TileSize * kFp8TileSize);
    }
    padded_experts.push_back(padded_segments.back());
  }
  ctx.token_segments = device_offsets(segments, device);              // [local * ep + 1]
  ctx.padded_segments = device_offsets(padded_segments, device);      // [local * ep + 1]
  ctx.padded_local_offsets = device_offsets(padded_experts, device);  // [local + 1]
  ctx.experts.token_segments = ctx.token_segments;
  ctx.experts.padded_segments = ctx.padded_segments;
  ctx.experts.padded_expert_offsets = ctx.padded_local_offsets;
}

void MoeLayer::combine(const Context& ctx, const Tensor& out, const Tensor& residual) const {
  unpermute_tokens(out, ctx.expert_output, ctx.topk_weights, *ctx.plan, residual);  // [T, H]
}

void MoeLayer::backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out, float balance_loss_grad,
                              OwnedTensor d_out_bf16) const {
  bool handed_bf16 = d_out_bf16.tensor().defined();
  HAI_CHECK(!handed_bf16 || takes_bf16_output_grad(),
            "MoE layer: a bf16 copy of its output gradient handed to a layer that does not read one");
  const int64_t tokens = d_out.size(0), hidden = d_out.size(1);
  const Device device = d_out.device();
  // NOTE: without an exchange, in the dtype the experts compute in (bf16 in bf16 training): they keep it for W.
  DType gradient_dtype = exchange_ ? DType::f32 : saved_activation_dtype(experts_.compute_dtype());
  OwnedTensor d_expert_output(Shape{tokens * experts_per_token_, hidden}, gradient_dtype, device);  // [T * K, H]
  OwnedTensor d_topk_weights(Shape{tokens, experts_per_token_}, DType::f32, device);          // [T, K]
  OwnedTensor d_out_per_tp_rank;  // [T, H] d_out / tp (header: tensor parallelism)
  if (tp_size_ > 1) {
    d_out_per_tp_rank = to_compute_dtype(d_out, DType::f32);
    scale_tensor(d_out_per_tp_rank, 1.0f / static_cast<float>(tp_size_));
  }
  combine_backward(ctx, d_expert_output, d_topk_weights, tp_size_ > 1 ? d_out_per_tp_rank.tensor() : d_out);
  ctx.expert_output = OwnedTensor();
  OwnedTensor d_x_sorted(Shape{tokens * experts_per_token_, hidden}, DType::f32, device);  // [T * K, H]
  experts_backward(ctx, d_x_sorted, std::move(d_expert_output));
  if (tp_size_ > 1) {
    scale_tensor(d_topk_weights, static_cast<float>(tp_size_));
    scale_tensor(d_x_sorted, static_cast<float>(tp_size_));
  }
  dispatch_backward(ctx, d_x, d_x_sorted);
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

void MoeLayer::combine_backward(const Context& ctx, const Tensor& d_expert_output, const Tensor& d_topk_weights,
                                const Tensor& d_out) const {
  unpermute_tokens_backward(d_expert_output, d_topk_weights, d_out, ctx.expert_output, ctx.topk_weights, *ctx.plan);
}

void MoeLayer::experts_backward(Context& ctx, const Tensor& d_x_sorted, OwnedTensor d_expert_output) const {
  // NOTE: every sorted row belongs to one expert, so the grouped GEMMs write all of d_x_sorted.
  if (!exchange_) {
    experts_.backward_input(ctx.experts, d_x_sorted, std::move(d_expert_output));
    return;
  }
  Shape local_rows{ctx.route.received_total(), d_x_sorted.size(1)};
  OwnedTensor d_output_local(local_rows, DType::f32, d_x_sorted.device());  // [R, H] by local expert
  OwnedTensor d_x_local(local_rows, DType::f32, d_x_sorted.device());       // [R, H]
  mark_phase(profiler_, "backward_input.expert_exchange");
  exchange_->dispatch(ctx.route, d_output_local, d_expert_output);
  mark_phase(profiler_, "backward_input.moe_experts");
  experts_.backward_input(ctx.experts, d_x_local, std::move(d_output_local));
  mark_phase(profiler_, "backward_input.expert_exchange");
  exchange_->combine(ctx.route, d_x_sorted, d_x_local);
  mark_phase(profiler_, "backward_input.moe_experts");
}

void MoeLayer::dispatch_backward(const Context& ctx, const Tensor& d_x, const Tensor& d_x_sorted) const {
  permute_tokens_backward(d_x, d_x_sorted, *ctx.plan);
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

void MoeLayer::backward_weight(Context& ctx) const {
  mark_phase(profiler_, "backward_weight.moe_routing");
  gemm(gate_->grad, ctx.d_logits, ctx.input, {.transpose_a = true, .beta = gate_->take_grad_beta()});
  mark_phase(profiler_, "backward_weight.moe_experts");
  if (exchange_) {
    experts_.backward_weight(ctx.experts);
  } else {
    // The experts' rows again: permuted from the shared expert's saved input when that is the same rounding of x
    // (not under sequence parallelism, where it keeps every tp rank's rows).
    OwnedTensor x_sorted = shared_reads_expert_tokens() && !tp_.splits_sequence() ? permuted(ctx, ctx.shared->input)
                                                        : sorted_rows(ctx, ctx.input, expert_tokens(ctx.input));
    experts_.backward_weight(ctx.experts, &x_sorted.tensor());  // [T * K, H]
  }
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
