#include "model/moe_layer.h"

#include <fmt/format.h>

#include "framework/device/balance_loss.h"
#include "framework/device/elementwise.h"
#include "framework/device/expert_load.h"
#include "framework/device/gemm.h"
#include "model/linear.h"
#include "model/parameters.h"

namespace hai {
namespace {

// NOTE: the balance loss is read back on the host (it is logged) and its gradient seed written there; both are
// a handful of scalars per micro-batch.
double host_mean(const Tensor& values) {
  HAI_CHECK(values.device().is_cpu(), "MoE balance loss: host tensor expected, got {}", values.str());
  double sum = 0;
  for (int64_t i = 0; i < values.numel(); ++i) sum += values.data<float>()[i];
  return sum / static_cast<double>(values.numel());
}

OwnedTensor host_filled(int64_t size, float value) {
  OwnedTensor tensor(Shape{size}, DType::f32);
  for (int64_t i = 0; i < size; ++i) tensor.data<float>()[i] = value;
  return tensor;
}

}  // namespace

MoeLayer::MoeLayer(const ModelConfig& config, const ParameterStore& store, int64_t layer)
    : routed_experts_(config.moe.routed_experts),
      experts_per_token_(config.moe.experts_per_token),
      router_options_{.groups = config.moe.groups,
                      .groups_per_token = config.moe.groups_per_token,
                      .routed_scaling_factor = static_cast<float>(config.moe.routed_scaling_factor)},
      balance_loss_alpha_(static_cast<float>(config.moe.balance_loss_alpha)) {
  const std::string prefix = layer_prefix(layer) + "mlp.";
  gate_ = &store[prefix + "gate.weight"];
  bias_ = &store[prefix + "gate.e_score_correction_bias"];
  check_shape(gate_->value, Shape{routed_experts_, config.hidden_size}, "MoE gate weight");
  check_shape(bias_->value, Shape{routed_experts_}, "MoE gate bias");
  experts_.reserve(static_cast<size_t>(routed_experts_));
  for (int64_t expert = 0; expert < routed_experts_; ++expert) {
    experts_.emplace_back(store, fmt::format("{}experts.{}.", prefix, expert));
  }
  if (config.moe.shared_experts > 0) shared_.emplace(store, prefix + "shared_experts.");
}

void MoeLayer::forward(Context& ctx, const Tensor& out, const Tensor& x, int64_t seq_len) const {
  route(ctx, x, seq_len);
  OwnedTensor x_sorted = dispatch(ctx, x);  // [T * K, H]
  compute_experts(ctx, x_sorted);
  combine(ctx, out);
  if (shared_) {
    OwnedTensor shared_out(x.shape(), DType::f32, x.device());  // [T, H]
    ctx.shared.emplace();
    shared_->forward(*ctx.shared, shared_out, x);
    add_scaled(out, shared_out);
  }
}

void MoeLayer::route(Context& ctx, const Tensor& x, int64_t seq_len) const {
  const int64_t tokens = x.size(0);
  HAI_CHECK(seq_len > 0 && tokens % seq_len == 0, "MoE layer: {} tokens are not whole sequences of {}", tokens,
            seq_len);
  const int64_t sequences = tokens / seq_len;
  const Device device = x.device();
  ctx.input = to_compute_dtype(x, DType::f32);                              // [T, H]
  OwnedTensor logits(Shape{tokens, routed_experts_}, DType::f32, device);  // [T, E]
  // NOTE: the gate is kept in fp32 in every precision mode (the FP8 recipe), so it reads the master value.
  gemm(logits, ctx.input, gate_->value, {.transpose_b = true});
  ctx.scores = OwnedTensor(Shape{tokens, routed_experts_}, DType::f32, device);           // [T, E]
  ctx.topk_indices = OwnedTensor(Shape{tokens, experts_per_token_}, DType::i32, device);  // [T, K]
  ctx.topk_weights = OwnedTensor(Shape{tokens, experts_per_token_}, DType::f32, device);  // [T, K]
  router_forward(ctx.scores, ctx.topk_indices, ctx.topk_weights, logits, bias_->value, router_options_);
  ctx.expert_fraction = OwnedTensor(Shape{sequences, routed_experts_}, DType::f32, device);  // [N, E]
  ctx.sequence_balance_loss = OwnedTensor(Shape{sequences}, DType::f32, device);           // [N]
  balance_loss_forward(ctx.sequence_balance_loss, ctx.expert_fraction, ctx.scores, ctx.topk_indices,
                       balance_loss_alpha_);
  ctx.balance_loss = host_mean(ctx.sequence_balance_loss);
}

OwnedTensor MoeLayer::dispatch(Context& ctx, const Tensor& x) const {
  const int64_t tokens = x.size(0);
  ctx.plan = std::make_unique<OwnedRoutingPlan>(tokens, experts_per_token_, routed_experts_, x.device());
  build_routing_plan(*ctx.plan, ctx.topk_indices);
  OwnedTensor x_sorted(Shape{tokens * experts_per_token_, x.size(1)}, DType::f32, x.device());  // [T * K, H]
  permute_tokens(x_sorted, x, *ctx.plan);
  return x_sorted;
}

void MoeLayer::compute_experts(Context& ctx, const Tensor& x_sorted) const {
  ctx.expert_output = OwnedTensor(x_sorted.shape(), DType::f32, x_sorted.device());  // [T * K, H]
  ctx.experts = std::vector<FeedForward::Context>(static_cast<size_t>(routed_experts_));
  for (int64_t expert = 0; expert < routed_experts_; ++expert) {
    auto [begin, end] = expert_rows(ctx, expert);
    if (begin == end) continue;
    experts_[expert].forward(ctx.experts[expert], ctx.expert_output.tensor().slice(begin, end),
                             x_sorted.slice(begin, end));
  }
}

void MoeLayer::combine(const Context& ctx, const Tensor& out) const {
  unpermute_tokens(out, ctx.expert_output, ctx.topk_weights, *ctx.plan);
}

void MoeLayer::backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out, float balance_loss_grad) const {
  const int64_t tokens = d_out.size(0), hidden = d_out.size(1);
  const Device device = d_out.device();
  OwnedTensor d_expert_output(Shape{tokens * experts_per_token_, hidden}, DType::f32, device);  // [T * K, H]
  OwnedTensor d_topk_weights(Shape{tokens, experts_per_token_}, DType::f32, device);          // [T, K]
  combine_backward(ctx, d_expert_output, d_topk_weights, d_out);
  OwnedTensor d_x_sorted(Shape{tokens * experts_per_token_, hidden}, DType::f32, device);  // [T * K, H]
  experts_backward(ctx, d_x_sorted, d_expert_output);
  dispatch_backward(ctx, d_x, d_x_sorted);
  if (shared_) shared_->backward_input(*ctx.shared, d_x, d_out, /*accumulate=*/true);
  route_backward(ctx, d_x, d_topk_weights, balance_loss_grad);
}

void MoeLayer::combine_backward(const Context& ctx, const Tensor& d_expert_output, const Tensor& d_topk_weights,
                                const Tensor& d_out) const {
  unpermute_tokens_backward(d_expert_output, d_topk_weights, d_out, ctx.expert_output, ctx.topk_weights, *ctx.plan);
}

void MoeLayer::experts_backward(Context& ctx, const Tensor& d_x_sorted, const Tensor& d_expert_output) const {
  // NOTE: every sorted row belongs to one expert, so the non-empty experts write all of d_x_sorted.
  for (int64_t expert = 0; expert < routed_experts_; ++expert) {
    auto [begin, end] = expert_rows(ctx, expert);
    if (begin == end) continue;
    experts_[expert].backward_input(ctx.experts[expert], d_x_sorted.slice(begin, end),
                                    d_expert_output.slice(begin, end));
  }
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
  OwnedTensor d_sequence_loss = host_filled(sequences, balance_loss_grad / static_cast<float>(sequences));  // [N]
  balance_loss_backward(ctx.d_logits, d_sequence_loss, ctx.expert_fraction, ctx.scores, balance_loss_alpha_);
  gemm(d_x, ctx.d_logits, gate_->value, {.beta = 1.0f});
}

void MoeLayer::backward_weight(Context& ctx) const {
  gemm(gate_->grad, ctx.d_logits, ctx.input, {.transpose_a = true, .beta = 1.0f});
  if (shared_) shared_->backward_weight(*ctx.shared);
  for (int64_t expert = 0; expert < routed_experts_; ++expert) {
    auto [begin, end] = expert_rows(ctx, expert);
    if (begin != end) experts_[expert].backward_weight(ctx.experts[expert]);
  }
}

void MoeLayer::accumulate_load(const Context& ctx, const Tensor& load) const {
  check_shape(load, Shape{routed_experts_}, "MoE expert load");
  accumulate_expert_load(load, ctx.topk_indices);
}

std::pair<int64_t, int64_t> MoeLayer::expert_rows(const Context& ctx, int64_t expert) const {
  const Tensor& expert_offsets = ctx.plan->plan().expert_offsets;
  HAI_CHECK(expert_offsets.device().is_cpu(), "MoE layer: the expert loop reads the routing plan on the host");
  const int32_t* offsets = expert_offsets.data<int32_t>();  // [E + 1]
  return {offsets[expert], offsets[expert + 1]};
}

}  // namespace hai
