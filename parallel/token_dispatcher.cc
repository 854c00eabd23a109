#include "parallel/token_dispatcher.h"

#include <utility>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/core/error.h"
#include "parallel/all_to_all_token_dispatcher.h"
#include "parallel/local_token_dispatcher.h"

namespace hai {

TokenDispatcher::TokenDispatcher(int64_t routed_experts, int ranks, int rank)
    : routed_experts_(routed_experts), ranks_(ranks), rank_(rank) {
  HAI_CHECK(routed_experts > 0 && ranks > 0 && routed_experts % ranks == 0,
            "expert parallelism: {} routed experts cannot be split evenly over {} ranks", routed_experts, ranks);
}

void TokenDispatcher::route(Context& ctx, const Tensor& topk_indices) const {
  HAI_CHECK(topk_indices.rank() == 2, "token dispatch: topk_indices must be [T, K], got {}", topk_indices.str());
  mark("forward.expert_exchange");
  ctx.plan = std::make_unique<OwnedRoutingPlan>(topk_indices.size(0), topk_indices.size(1), routed_experts_,
                                                topk_indices.device());
  build_routing_plan(*ctx.plan, topk_indices);
  plan_exchange(ctx);
}

OwnedTensor TokenDispatcher::moved_to_local(Context& ctx, const Tensor& tokens) const {
  HAI_CHECK(ctx.plan && tokens.rank() >= 1 && tokens.size(0) == ctx.plan->plan().positions.size(0),
            "token dispatch: {} must have a row for each of the routed tokens", tokens.str());
  const RoutingPlan& plan = ctx.plan->plan();
  std::vector<int64_t> dims = tokens.shape().to_vector();
  dims[0] = plan.sources.numel();
  // NOTE: the permutation is the packing: the sorted order holds each destination's rows consecutively.
  OwnedTensor sorted(Shape(dims), tokens.dtype(), tokens.device());  // [T * K, ...row]
  permute_tokens(sorted, tokens, plan);
  return to_local(ctx, std::move(sorted));
}

OwnedTensor TokenDispatcher::dispatch(Context& ctx, const Tensor& tokens) const {
  OwnedTensor local = moved_to_local(ctx, tokens);
  mark("forward.moe_experts");
  return local;
}

Fp8Rows TokenDispatcher::dispatch_fp8(Context& ctx, const Fp8Rows& tokens) const {
  Fp8Rows local;
  local.values = moved_to_local(ctx, tokens.values);
  local.scales = moved_to_local(ctx, tokens.scales);
  mark("forward.moe_experts");
  return local;
}

void TokenDispatcher::keep_for_weight_gradient(Context& ctx, OwnedTensor local) const {
  if (!exchanges()) return;
  ctx.kept_rows = std::move(local);
  ctx.rows_kept = true;
}

void TokenDispatcher::keep_for_weight_gradient(Context& ctx, Fp8Rows local) const {
  if (!exchanges()) return;
  ctx.kept_fp8_rows = std::move(local);
  ctx.rows_kept = true;
}

OwnedTensor TokenDispatcher::dispatch_again(Context& ctx, const std::function<Tensor()>& tokens) const {
  if (ctx.rows_kept) {
    ctx.rows_kept = false;
    return std::move(ctx.kept_rows);
  }
  mark("backward_weight.expert_exchange");
  OwnedTensor local = moved_to_local(ctx, tokens());
  mark("backward_weight.moe_experts");
  return local;
}

Fp8Rows TokenDispatcher::dispatch_fp8_again(Context& ctx, const std::function<Fp8Rows()>& tokens) const {
  if (ctx.rows_kept) {
    ctx.rows_kept = false;
    return std::move(ctx.kept_fp8_rows);
  }
  mark("backward_weight.expert_exchange");
  Fp8Rows rows = tokens();
  Fp8Rows local;
  local.values = moved_to_local(ctx, rows.values);
  local.scales = moved_to_local(ctx, rows.scales);
  mark("backward_weight.moe_experts");
  return local;
}

void TokenDispatcher::mark(std::string_view phase) const {
  if (exchanges()) mark_phase(profiler_, phase);
}

Tensor TokenDispatcher::local_offsets(const Context& ctx) const {
  return exchanges() ? ctx.receive.local_offsets : ctx.plan->plan().expert_offsets;
}

int64_t TokenDispatcher::local_rows(const Context& ctx) const {
  return exchanges() ? ctx.receive.local_arrival.numel() : ctx.plan->plan().sources.numel();
}

TokenDispatcher::SourceSegments TokenDispatcher::source_segments(const Context& ctx) const {
  if (!exchanges()) return {};
  return {ctx.receive.segments, ctx.receive.padded_segments, ctx.receive.padded_local_offsets};
}

void TokenDispatcher::combine(Context& ctx, const Tensor& out, OwnedTensor outputs, const Tensor& topk_weights,
                              const Tensor& residual, bool keep_outputs) const {
  mark("forward.expert_exchange");
  ctx.outputs = returned(ctx, std::move(outputs));  // [T * K, H]
  unpermute_tokens(out, ctx.outputs, topk_weights, *ctx.plan, residual);
  if (!keep_outputs) ctx.outputs = OwnedTensor();
  mark("forward.moe_experts");
}

void TokenDispatcher::return_outputs_again(Context& ctx, OwnedTensor outputs) const {
  HAI_CHECK(ctx.outputs.tensor().raw() == nullptr, "token dispatch: the experts' outputs returned twice");
  mark("backward_input.expert_exchange");
  ctx.outputs = returned(ctx, std::move(outputs));  // [T * K, H]
  mark("backward_input.moe_experts");
}

OwnedTensor TokenDispatcher::combine_backward(Context& ctx, const Tensor& d_topk_weights, const Tensor& d_out,
                                              const Tensor& topk_weights, DType dtype) const {
  mark("backward_input.expert_exchange");
  const Tensor& outputs = ctx.outputs.tensor();
  OwnedTensor d_rows(outputs.shape(), dtype, outputs.device());  // [T * K, H]
  unpermute_tokens_backward(d_rows, d_topk_weights, d_out, outputs, topk_weights, *ctx.plan);
  ctx.outputs = OwnedTensor();
  OwnedTensor d_local = to_local(ctx, std::move(d_rows));
  mark("backward_input.moe_experts");
  return d_local;
}

void TokenDispatcher::dispatch_backward(Context& ctx, const Tensor& d_x, OwnedTensor d_local) const {
  mark("backward_input.expert_exchange");
  OwnedTensor d_rows = returned(ctx, std::move(d_local));  // [T * K, H]
  permute_tokens_backward(d_x, d_rows, *ctx.plan);
  mark("backward_input.moe_experts");
}

std::unique_ptr<TokenDispatcher> make_token_dispatcher(int64_t routed_experts, Communicator* group) {
  if (group == nullptr || group->size() == 1) return std::make_unique<LocalTokenDispatcher>(routed_experts);
  return std::make_unique<AllToAllTokenDispatcher>(*group, routed_experts);
}

}  // namespace hai
