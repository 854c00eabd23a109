#include "model/feed_forward.h"

#include "framework/device/swiglu.h"

namespace hai {

FeedForward::FeedForward(const ParameterStore& store, const std::string& prefix)
    : gate_(store[prefix + "gate_proj.weight"]),
      up_(store[prefix + "up_proj.weight"]),
      down_(store[prefix + "down_proj.weight"]) {
  HAI_CHECK(up_.in_features() == hidden_size() && up_.out_features() == ffn_size(),
            "{}up_proj.weight must match gate_proj.weight [{}, {}]", prefix, ffn_size(), hidden_size());
  HAI_CHECK(down_.in_features() == ffn_size() && down_.out_features() == hidden_size(),
            "{}down_proj.weight must be [{}, {}]", prefix, hidden_size(), ffn_size());
}

void FeedForward::forward(Context& ctx, const Tensor& out, const Tensor& x) const {
  const int64_t rows = x.size(0);
  ctx.gate = OwnedTensor(Shape{rows, ffn_size()}, DType::f32, x.device());  // [N, F]
  ctx.up = OwnedTensor(Shape{rows, ffn_size()}, DType::f32, x.device());    // [N, F]
  gate_.forward(ctx.gate, x, ctx.input);
  // NOTE: gate_proj and up_proj read the same x, so up_proj's saved input replaces gate_proj's identical one.
  up_.forward(ctx.up, x, ctx.input);
  OwnedTensor activation(Shape{rows, ffn_size()}, DType::f32, x.device());  // [N, F]
  swiglu_forward(activation, ctx.gate, ctx.up);
  down_.forward(out, activation, ctx.activation);
}

void FeedForward::backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out, bool accumulate) const {
  const int64_t rows = d_out.size(0);
  ctx.d_out = to_compute_dtype(d_out, DType::f32);  // [N, H] a copy, for the wgrad of down_proj
  OwnedTensor d_activation(Shape{rows, ffn_size()}, DType::f32, d_out.device());  // [N, F]
  down_.backward_input(d_activation, d_out);
  ctx.d_gate = OwnedTensor(Shape{rows, ffn_size()}, DType::f32, d_out.device());  // [N, F]
  ctx.d_up = OwnedTensor(Shape{rows, ffn_size()}, DType::f32, d_out.device());    // [N, F]
  swiglu_backward(ctx.d_gate, ctx.d_up, d_activation, ctx.gate, ctx.up);
  gate_.backward_input(d_x, ctx.d_gate, accumulate);
  up_.backward_input(d_x, ctx.d_up, /*accumulate=*/true);
}

void FeedForward::backward_weight(Context& ctx) const {
  down_.backward_weight(ctx.d_out, ctx.activation);
  gate_.backward_weight(ctx.d_gate, ctx.input);
  up_.backward_weight(ctx.d_up, ctx.input);
}

}  // namespace hai
