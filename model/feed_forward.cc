#include "model/feed_forward.h"

#include <utility>

#include "framework/device/gemm.h"
#include "framework/device/swiglu.h"
#include "model/in_dtype.h"
#include "parallel/sequence_parallel.h"

namespace hai {

FeedForward::FeedForward(const ParameterStore& store, const std::string& prefix, TensorParallel tp)
    : gate_(store[prefix + "gate_proj.weight"]),
      up_(store[prefix + "up_proj.weight"]),
      down_(store[prefix + "down_proj.weight"]),
      tp_(tp) {
  HAI_CHECK(up_.in_features() == hidden_size() && up_.out_features() == ffn_size(),
            "{}up_proj.weight must match gate_proj.weight [{}, {}]", prefix, ffn_size(), hidden_size());
  HAI_CHECK(down_.in_features() == ffn_size() && down_.out_features() == hidden_size(),
            "{}down_proj.weight must be [{}, {}]", prefix, hidden_size(), ffn_size());
  const Parameter& gate = store[prefix + "gate_proj.weight"];
  const Parameter& up = store[prefix + "up_proj.weight"];
  if (gate_.uses_fp8()) {
    pow2_scales_ = gate.fp8.pow2_activation_scales;
    return;
  }
  std::optional<Tensor> compute = rows_stacked_in_place(gate.compute, up.compute);
  std::optional<Tensor> grad = rows_stacked_in_place(gate.grad, up.grad);
  HAI_CHECK(compute.has_value() && grad.has_value(), "{}up_proj.weight does not follow gate_proj.weight in the "
            "parameter store", prefix);
  gate_up_ = StackedGateUp{*compute, *grad, &gate, &up};
}

void FeedForward::forward(Context& ctx, const Tensor& out, const Tensor& x, bool accumulate) const {
  if (regathers_input()) return forward(ctx, out, gate_.prepare_input(x).saved, accumulate);  // [N / tp, H] a copy
  OwnedTensor gathered;
  Tensor input = all_gather_sequence(tp_, x, gathered);  // [N, H] every tp rank's rows under sequence parallelism
  forward(ctx, out, gate_.prepare_input(input), input.size(0), x.device(), accumulate);
}

void FeedForward::forward(Context& ctx, const Tensor& out, OwnedTensor&& local_x, bool accumulate) const {
  if (!regathers_input()) {
    OwnedTensor x = all_gather_sequence(tp_, std::move(local_x));  // [N, H] every tp rank's rows under SP
    int64_t rows = x.tensor().size(0);
    Device device = x.tensor().device();
    return forward(ctx, out, gate_.prepare_input(std::move(x)), rows, device, accumulate);
  }
  // [N / tp, H] this rank's rows in the compute dtype: kept for the weight gradient, which gathers them again
  OwnedTensor kept = gate_.prepare_input(std::move(local_x)).saved;
  OwnedTensor x;  // [N, H]
  all_gather_sequence(tp_, kept, x);
  int64_t rows = x.tensor().size(0);
  forward(ctx, out, gate_.prepare_input(std::move(x)), rows, kept.tensor().device(), accumulate);
  if (!recomputes_input()) ctx.input = std::move(kept);
}

void FeedForward::forward(Context& ctx, const Tensor& out, Linear::PreparedInput input, int64_t rows, Device device,
                          bool accumulate) const {
  OwnedTensor activation = projections_forward(ctx, input, rows, device);  // [N, F]
  ctx.input = std::move(input.saved);
  // NOTE: the row-parallel down_proj's partial outputs are summed over the tp ranks: the region's exit.
  reduce_scatter_sequence(tp_, out, accumulate, [&](const Tensor& y, bool add) {
    down_.forward(y, std::move(activation), ctx.activation, add);
  });
  if (recomputes_input()) ctx.input = OwnedTensor();
  if (recomputes_activation()) ctx.activation = OwnedTensor();
}

void FeedForward::recompute_input(Context& ctx, OwnedTensor&& x) const {
  HAI_CHECK(recomputes_input(), "feed-forward: an input handed back to a layer that keeps its own");
  if (regathers_input()) {
    ctx.input = gate_.prepare_input(std::move(x)).saved;  // [N / tp, H]: backward_weight gathers it
    return;
  }
  ctx.input = gate_.prepare_input(all_gather_sequence(tp_, std::move(x))).saved;
}

void FeedForward::recompute_input(Context& ctx, const Tensor& x) const {
  HAI_CHECK(recomputes_input(), "feed-forward: an input handed back to a layer that keeps its own");
  OwnedTensor gathered;
  // [N / tp, H] when backward_weight gathers it, else [N, H]
  ctx.input = gate_.prepare_input(regathers_input() ? x : all_gather_sequence(tp_, x, gathered)).saved;
}

OwnedTensor FeedForward::projections_forward(Context& ctx, const Linear::PreparedInput& input, int64_t rows,
                                             Device device) const {
  // NOTE: in bf16 (no FP8) the GEMM writes gate and up, and SwiGLU its activation, in bf16 straight away, as the
  // routed experts do: SwiGLU's forward reads the rounded gate and up that its backward reads. With FP8 only the
  // activation is written in bf16 (down_proj quantises it from there): gate and up stay fp32 for SwiGLU's forward,
  // whose input rounding them would change, and are kept for its backward in FP8 (1x128).
  DType activation_dtype = down_.input_dtype();
  OwnedTensor activation(Shape{rows, ffn_size()}, activation_dtype, device);  // [N, F]
  DType saved = saved_activation_dtype(gate_.compute_dtype());
  if (gate_up_) {
    OwnedTensor gate_up(Shape{rows, 2 * ffn_size()}, activation_dtype, device);  // [N, 2F]
    gemm(gate_up, input.saved, gate_up_->compute, {.transpose_b = true});
    swiglu_forward(activation, gate_up);
    ctx.gate_up = in_dtype(std::move(gate_up), saved);
    return activation;
  }
  OwnedTensor gate(Shape{rows, ffn_size()}, DType::f32, device);  // [N, F]
  OwnedTensor up(Shape{rows, ffn_size()}, DType::f32, device);    // [N, F]
  gate_.forward(gate, input);  // gate_proj and up_proj read the same prepared x
  up_.forward(up, input);
  swiglu_forward(activation, gate, up);
  ctx.gate = quantize_rows(gate, pow2_scales_);
  ctx.up = quantize_rows(up, pow2_scales_);
  return activation;
}

void FeedForward::backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out, bool accumulate) const {
  // [N, H] a copy (the caller may reuse d_out), rounded to the dtype of the layer's output gradients
  backward_input(ctx, d_x, to_compute_dtype(d_out, output_grad_dtype()), accumulate);
}

void FeedForward::backward_input(Context& ctx, const Tensor& d_x, OwnedTensor&& local_d_out, bool accumulate) const {
  OwnedTensor d_out = all_gather_sequence(tp_, std::move(local_d_out));  // [N, H] the exit's backward
  const int64_t rows = d_out.tensor().size(0);
  const Device device = d_out.tensor().device();
  ctx.d_out = down_.prepare_output_grad(std::move(d_out));
  OwnedTensor d_activation(Shape{rows, ffn_size()}, DType::f32, device);  // [N, F]
  down_.backward_input(d_activation, ctx.d_out);
  // NOTE: the column-parallel gate_proj and up_proj give partial input gradients: the region's entry sums them.
  reduce_scatter_sequence(tp_, d_x, accumulate, [&](const Tensor& partial, bool add) {
    projections_backward_input(ctx, partial, d_activation, add);
  });
}

void FeedForward::projections_backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_activation,
                                             bool accumulate) const {
  const int64_t rows = d_activation.size(0);
  const Device device = d_activation.device();
  DType written = saved_activation_dtype(gate_.output_grad_dtype());  // bf16 in bf16 and fp8: no fp32 copies
  if (gate_up_) {
    if (recomputes_activation()) {
      // SwiGLU's activation for down_proj's weight gradient, from the gate and up it was made of in forward
      OwnedTensor activation(Shape{rows, ffn_size()}, down_.input_dtype(), device);  // [N, F]
      swiglu_forward(activation, ctx.gate_up);
      ctx.activation = down_.prepare_input(std::move(activation)).saved;
    }
    // One GEMM over the 2F inputs: d_x is written (or added to) once.
    OwnedTensor d_gate_up(Shape{rows, 2 * ffn_size()}, written, device);  // [N, 2F]
    swiglu_backward(d_gate_up, d_activation, ctx.gate_up);
    ctx.gate_up = OwnedTensor();
    ctx.d_gate_up = in_dtype(std::move(d_gate_up), gate_.output_grad_dtype());
    gemm(d_x, ctx.d_gate_up, gate_up_->compute, {.beta = accumulate ? 1.0f : 0.0f});
    return;
  }
  OwnedTensor d_gate(Shape{rows, ffn_size()}, written, device);  // [N, F]
  OwnedTensor d_up(Shape{rows, ffn_size()}, written, device);    // [N, F]
  swiglu_backward(d_gate, d_up, d_activation, dequantize_rows(ctx.gate), dequantize_rows(ctx.up));
  ctx.gate = Fp8Rows();
  ctx.up = Fp8Rows();
  ctx.d_gate = gate_.prepare_output_grad(in_dtype(std::move(d_gate), gate_.output_grad_dtype()));
  ctx.d_up = up_.prepare_output_grad(in_dtype(std::move(d_up), up_.output_grad_dtype()));
  gate_.backward_input(d_x, ctx.d_gate, accumulate);
  up_.backward_input(d_x, ctx.d_up, /*accumulate=*/true);
}

void FeedForward::backward_weight(Context& ctx) const {
  down_.backward_weight(ctx.d_out, ctx.activation);
  if (gate_up_) {
    float beta = gate_up_->gate->take_grad_beta();
    HAI_CHECK(gate_up_->up->take_grad_beta() == beta,
              "feed-forward: gate_proj's and up_proj's gradients written apart this step");
    OwnedTensor gathered;
    // [N, H] x in the compute dtype (this rank's rows gathered again under sequence parallelism)
    Tensor input = regathers_input() ? all_gather_sequence(tp_, ctx.input, gathered) : ctx.input.tensor();
    gemm(gate_up_->grad, ctx.d_gate_up, input, {.transpose_a = true, .beta = beta});
  } else {
    gate_.backward_weight(ctx.d_gate, ctx.input);
    up_.backward_weight(ctx.d_up, ctx.input);
  }
  ctx = Context{};
}

}  // namespace hai
