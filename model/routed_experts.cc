#include "model/routed_experts.h"

#include <fmt/format.h>

#include <optional>
#include <utility>
#include <vector>

#include "framework/device/fp8_rows.h"
#include "framework/device/swiglu.h"
#include "model/in_dtype.h"
#include "model/linear.h"

namespace hai {
namespace {

// The E tensors member(parameter) (compute copy, gradient, an FP8 copy or its scales) of `parameters` as one
// ExpertWeights, checked to be equally spaced in memory.
template <typename Member>
ExpertWeights equally_spaced(const std::vector<const Parameter*>& parameters, Member member) {
  const Tensor& first = member(*parameters.front());
  ExpertWeights weights{
      .first = first, .expert_stride = first.numel(), .experts = static_cast<int64_t>(parameters.size())};
  auto element_distance = [&](const Tensor& tensor) {
    return (static_cast<const char*>(tensor.raw()) - static_cast<const char*>(first.raw())) /
           static_cast<int64_t>(dtype_size(first.dtype()));
  };
  if (parameters.size() > 1) weights.expert_stride = element_distance(member(*parameters[1]));
  for (size_t e = 0; e < parameters.size(); ++e) {
    const Tensor& tensor = member(*parameters[e]);
    HAI_CHECK(tensor.raw() != nullptr && tensor.shape() == first.shape() && tensor.dtype() == first.dtype() &&
                  element_distance(tensor) == static_cast<int64_t>(e) * weights.expert_stride,
              "{}: the routed experts' weights are not equally spaced in the parameter store",
              parameters[e]->spec.name);
  }
  return weights;
}

ExpertWeights compute_copies(const std::vector<const Parameter*>& parameters) {
  return equally_spaced(parameters, [](const Parameter& parameter) -> const Tensor& { return parameter.compute; });
}

ExpertWeights gradients(const std::vector<const Parameter*>& parameters) {
  return equally_spaced(parameters, [](const Parameter& parameter) -> const Tensor& { return parameter.grad; });
}

// gate_proj's and up_proj's E x [F, H] matrices as one E x [2F, H] (each expert's up_proj right after its gate_proj,
// as the ParameterStore lays out the experts' weights and gradients), so that one grouped GEMM does both.
ExpertWeights stacked(const ExpertWeights& gate, const ExpertWeights& up) {
  std::optional<Tensor> both = rows_stacked_in_place(gate.first, up.first);
  HAI_CHECK(both.has_value() && up.expert_stride == gate.expert_stride,
            "routed experts: each expert's up_proj does not follow its gate_proj in the parameter store");
  return {.first = *both, .expert_stride = gate.expert_stride, .experts = gate.experts};
}

// The FP8 copies of `parameters` as stored (forward) or transposed (input gradient).
Fp8ExpertWeights fp8_copies(const std::vector<const Parameter*>& parameters, bool transposed) {
  return {
      .values = equally_spaced(parameters,
                               [&](const Parameter& parameter) -> const Tensor& {
                                 return transposed ? parameter.fp8.transposed_values : parameter.fp8.values;
                               }),
      .scales = equally_spaced(parameters, [&](const Parameter& parameter) -> const Tensor& {
        return transposed ? parameter.fp8.transposed_scales : parameter.fp8.scales;
      })};
}

// The beta of the grouped weight-gradient GEMM into a projection's E gradients (Parameter::take_grad_beta): one call
// writes them all, so they agree.
float take_grad_beta(const std::vector<const Parameter*>& projection) {
  float beta = projection.front()->take_grad_beta();
  for (size_t e = 1; e < projection.size(); ++e) {
    float expert_beta = projection[e]->take_grad_beta();
    HAI_CHECK(expert_beta == beta, "{}: written apart from the other experts' gradients this step",
              projection[e]->spec.name);
  }
  return beta;
}

std::vector<const Parameter*> projection_of_experts(const ParameterStore& store, const std::string& prefix,
                                                    int64_t experts, int64_t first_expert, const char* projection) {
  HAI_CHECK(experts > 0, "routed experts under {}: {} experts", prefix, experts);
  std::vector<const Parameter*> parameters;
  for (int64_t e = first_expert; e < first_expert + experts; ++e) {
    parameters.push_back(&store[fmt::format("{}{}.{}.weight", prefix, e, projection)]);
  }
  return parameters;
}

}  // namespace

RoutedExperts::RoutedExperts(const ParameterStore& store, const std::string& prefix, int64_t experts,
                             int64_t first_expert)
    : gate_parameters_(projection_of_experts(store, prefix, experts, first_expert, "gate_proj")),
      up_parameters_(projection_of_experts(store, prefix, experts, first_expert, "up_proj")),
      down_parameters_(projection_of_experts(store, prefix, experts, first_expert, "down_proj")),
      compute_dtype_(store.compute_dtype()) {
  HAI_CHECK(up_parameters_.front()->spec.shape == gate_parameters_.front()->spec.shape &&
                down_parameters_.front()->spec.shape == (Shape{hidden_size(), ffn_size()}),
            "{}: up_proj must match gate_proj [{}, {}] and down_proj be [{}, {}]", prefix, ffn_size(),
            hidden_size(), hidden_size(), ffn_size());
  if (gate_parameters_.front()->fp8.defined()) {
    fp8_ = Fp8Projections{.gate = fp8_copies(gate_parameters_, false),
                          .up = fp8_copies(up_parameters_, false),
                          .down = fp8_copies(down_parameters_, false),
                          .gate_transposed = fp8_copies(gate_parameters_, true),
                          .up_transposed = fp8_copies(up_parameters_, true),
                          .down_transposed = fp8_copies(down_parameters_, true),
                          .pow2_activation_scales = gate_parameters_.front()->fp8.pow2_activation_scales};
  } else {
    gate_up_ = stacked(compute_copies(gate_parameters_), compute_copies(up_parameters_));
    down_ = compute_copies(down_parameters_);
  }
  gate_grad_ = gradients(gate_parameters_);
  up_grad_ = gradients(up_parameters_);
  down_grad_ = gradients(down_parameters_);
}

Tensor RoutedExperts::input_in_compute_dtype(const Tensor& x_sorted, OwnedTensor& storage) const {
  if (x_sorted.dtype() == compute_dtype()) return x_sorted;
  storage = to_compute_dtype(x_sorted, compute_dtype());
  return storage.tensor();
}

void RoutedExperts::forward(Context& ctx, const Tensor& out, const Tensor& x_sorted, const Tensor& expert_offsets,
                            bool keep_input) const {
  HAI_CHECK(!uses_fp8(), "routed experts with FP8 weights: forward_fp8 reads the dispatch's FP8 rows");
  const int64_t rows = x_sorted.size(0);
  const Device device = x_sorted.device();
  ctx.expert_offsets = expert_offsets;
  // NOTE: in bf16 the GEMM writes gate and up, and SwiGLU its activation, in bf16 straight away (no fp32 copies):
  // SwiGLU's forward reads the rounded gate and up that its backward reads.
  DType saved = saved_activation_dtype(compute_dtype());
  OwnedTensor rounded;
  Tensor input = input_in_compute_dtype(x_sorted, rounded);                // [R, H]
  ctx.gate_up = OwnedTensor(Shape{rows, 2 * ffn_size()}, saved, device);  // [R, 2F]
  grouped_gemm(ctx.gate_up, input, gate_up_, expert_offsets);
  if (keep_input) ctx.input = x_sorted.dtype() == compute_dtype() ? to_compute_dtype(x_sorted, compute_dtype())
                                                                  : std::move(rounded);
  OwnedTensor activation(Shape{rows, ffn_size()}, saved, device);  // [R, F]
  swiglu_forward(activation, ctx.gate_up);
  ctx.activation = in_dtype(std::move(activation), compute_dtype());
  grouped_gemm(out, ctx.activation, down_, expert_offsets);
  if (recompute_) ctx.activation = OwnedTensor();
}

void RoutedExperts::forward_fp8(Context& ctx, const Tensor& out, const Fp8Matrix& x_sorted,
                                const Tensor& expert_offsets, OwnedTensor kept_input) const {
  HAI_CHECK(uses_fp8(), "routed experts without FP8 weights: forward reads rows in the compute dtype");
  const int64_t rows = x_sorted.values.size(0);
  const Device device = x_sorted.values.device();
  ctx.expert_offsets = expert_offsets;
  if (kept_input.tensor().raw() != nullptr) ctx.input_tokens = token_copy(ctx, kept_input);
  DType saved = saved_activation_dtype(compute_dtype());
  OwnedTensor gate(Shape{rows, ffn_size()}, saved, device);  // [R, F]
  OwnedTensor up(Shape{rows, ffn_size()}, saved, device);    // [R, F]
  grouped_gemm_fp8(gate, x_sorted, fp8_->gate, expert_offsets);
  grouped_gemm_fp8(up, x_sorted, fp8_->up, expert_offsets);
  // NOTE: the activation is quantised from fp32 (SwiGLU's math) for down_proj, and rounded to bf16 for W, whose
  // token-padded FP8 copy is what is kept.
  OwnedTensor activation(Shape{rows, ffn_size()}, DType::bf16, device);  // [R, F]
  Fp8Rows activation_rows(rows, ffn_size(), device);                     // [R, F]
  swiglu_forward_fp8(activation, activation_rows.values, activation_rows.scales, gate, up,
                     fp8_->pow2_activation_scales);
  ctx.gate = quantize_rows(gate, fp8_->pow2_activation_scales);
  ctx.up = quantize_rows(up, fp8_->pow2_activation_scales);
  grouped_gemm_fp8(out, activation_rows.matrix(), fp8_->down, expert_offsets);
  ctx.activation_tokens = token_copy(ctx, activation);
  if (recompute_) ctx.activation_rows = std::move(activation_rows);
}

void RoutedExperts::recompute_output(Context& ctx, const Tensor& out) const {
  HAI_CHECK(recompute_, "routed experts: outputs recomputed by experts that keep nothing for it");
  if (uses_fp8()) {
    grouped_gemm_fp8(out, ctx.activation_rows.matrix(), fp8_->down, ctx.expert_offsets);
    ctx.activation_rows = Fp8Rows();
    return;
  }
  remake_activation(ctx);
  grouped_gemm(out, ctx.activation, down_, ctx.expert_offsets);
}

void RoutedExperts::remake_activation(Context& ctx) const {
  if (ctx.activation.tensor().raw() != nullptr) return;
  // [R, F] as forward made it: the same SwiGLU on the same gate and up
  OwnedTensor activation(Shape{ctx.gate_up.tensor().size(0), ffn_size()}, saved_activation_dtype(compute_dtype()),
                         ctx.gate_up.tensor().device());
  swiglu_forward(activation, ctx.gate_up);
  ctx.activation = in_dtype(std::move(activation), compute_dtype());
}

void RoutedExperts::backward_input(Context& ctx, const Tensor& d_x_sorted, OwnedTensor d_out) const {
  const int64_t rows = d_out.tensor().size(0);
  const Device device = d_out.tensor().device();
  ctx.d_out = in_dtype(std::move(d_out), compute_dtype());  // [R, H]
  OwnedTensor d_activation(Shape{rows, ffn_size()}, DType::f32, device);  // [R, F]
  input_gradient(ctx, d_activation, ctx.d_out, down_, &Fp8Projections::down_transposed, &Context::d_out_tokens, 0.0f);
  DType written = saved_activation_dtype(compute_dtype());  // bf16 in bf16 training: no fp32 copies
  if (!uses_fp8()) {
    if (recompute_) remake_activation(ctx);
    // One GEMM over gate_proj's and up_proj's 2F inputs: d_x is written once, not written and then added to.
    OwnedTensor d_gate_up(Shape{rows, 2 * ffn_size()}, written, device);  // [R, 2F]
    swiglu_backward(d_gate_up, d_activation, ctx.gate_up);
    ctx.gate_up = OwnedTensor();
    ctx.d_gate_up = in_dtype(std::move(d_gate_up), compute_dtype());
    grouped_gemm(d_x_sorted, ctx.d_gate_up, gate_up_, ctx.expert_offsets, {.transpose_weights = false});
    return;
  }
  OwnedTensor d_gate(Shape{rows, ffn_size()}, written, device);  // [R, F]
  OwnedTensor d_up(Shape{rows, ffn_size()}, written, device);    // [R, F]
  swiglu_backward(d_gate, d_up, d_activation, dequantize_rows(ctx.gate), dequantize_rows(ctx.up));
  ctx.gate = Fp8Rows();
  ctx.up = Fp8Rows();
  input_gradient(ctx, d_x_sorted, in_dtype(std::move(d_gate), compute_dtype()), {}, &Fp8Projections::gate_transposed,
                 &Context::d_gate_tokens, 0.0f);
  input_gradient(ctx, d_x_sorted, in_dtype(std::move(d_up), compute_dtype()), {}, &Fp8Projections::up_transposed,
                 &Context::d_up_tokens, 1.0f);
  ctx.d_out = OwnedTensor();  // NOTE: the weight gradient reads the FP8 copies
}

void RoutedExperts::input_gradient(Context& ctx, const Tensor& d_x, const Tensor& d_y, const ExpertWeights& weights,
                                   Fp8ExpertWeights Fp8Projections::*transposed, Fp8ExpertTokenBuffers Context::*kept,
                                   float beta) const {
  if (!uses_fp8()) {
    grouped_gemm(d_x, d_y, weights, ctx.expert_offsets, {.transpose_weights = false, .beta = beta});
    return;
  }
  // NOTE: d_y is what the bf16 weight gradient would keep (bf16 in fp8 training), widened exactly and quantised.
  TokenTiles tiles = token_tiles(ctx);
  Fp8RowsAndExpertTokens fp8 = quantize_rows_and_tokens_by_expert(d_y, tiles.segments, tiles.padded_segments,
                                                                  fp8_->pow2_activation_scales);  // [R, N], [N, P]
  grouped_gemm_fp8(d_x, fp8.rows.matrix(), (*fp8_).*transposed, ctx.expert_offsets, beta);
  ctx.*kept = std::move(fp8.tokens);
}

RoutedExperts::TokenTiles RoutedExperts::token_tiles(Context& ctx) const {
  if (ctx.token_segments.raw() != nullptr) {
    return {ctx.token_segments, ctx.padded_segments, ctx.padded_expert_offsets};
  }
  if (ctx.padded_offsets.tensor().raw() == nullptr) {
    ctx.padded_offsets = OwnedTensor(ctx.expert_offsets.shape(), DType::i32, ctx.expert_offsets.device());
    pad_expert_offsets(ctx.padded_offsets, ctx.expert_offsets);
  }
  return {ctx.expert_offsets, ctx.padded_offsets, ctx.padded_offsets};
}

void RoutedExperts::backward_weight(Context& ctx, const Tensor* x_sorted) const {
  // NOTE: the same rounding of the same rows as forward, so the recomputed input is forward's bit for bit.
  OwnedTensor rounded;
  Tensor input = x_sorted ? input_in_compute_dtype(*x_sorted, rounded) : ctx.input.tensor();  // [R, H]
  if (uses_fp8()) {
    backward_weight_fp8(ctx, x_sorted ? &input : nullptr);
  } else {
    grouped_gemm_weight_grad(down_grad_, ctx.d_out, ctx.activation, ctx.expert_offsets,
                             take_grad_beta(down_parameters_));
    float gate_beta = take_grad_beta(gate_parameters_), up_beta = take_grad_beta(up_parameters_);
    HAI_CHECK(gate_beta == up_beta, "routed experts: gate_proj's and up_proj's gradients written apart this step");
    grouped_gemm_weight_grad(stacked(gate_grad_, up_grad_), ctx.d_gate_up, input, ctx.expert_offsets, gate_beta);
  }
  ctx = Context{};
}

void RoutedExperts::backward_weight_fp8(Context& ctx, const Tensor* input) const {
  if (input != nullptr) ctx.input_tokens = token_copy(ctx, *input);
  const Tensor& padded = token_tiles(ctx).padded_experts;
  grouped_gemm_fp8_weight_grad(down_grad_, ctx.d_out_tokens.tokens(), ctx.activation_tokens.tokens(), padded,
                               take_grad_beta(down_parameters_));
  grouped_gemm_fp8_weight_grad(gate_grad_, ctx.d_gate_tokens.tokens(), ctx.input_tokens.tokens(), padded,
                               take_grad_beta(gate_parameters_));
  grouped_gemm_fp8_weight_grad(up_grad_, ctx.d_up_tokens.tokens(), ctx.input_tokens.tokens(), padded,
                               take_grad_beta(up_parameters_));
}

Fp8ExpertTokenBuffers RoutedExperts::token_copy(Context& ctx, const Tensor& sorted) const {
  TokenTiles tiles = token_tiles(ctx);
  return quantize_tokens_by_expert(sorted, tiles.segments, tiles.padded_segments, fp8_->pow2_activation_scales);
}

}  // namespace hai
