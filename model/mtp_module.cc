#include "model/mtp_module.h"

#include <utility>

#include "framework/device/column_copy.h"
#include "framework/device/elementwise.h"
#include "framework/device/rmsnorm.h"
#include "model/parameters.h"

namespace hai {
namespace {

int64_t mtp_layer(const ModelConfig& model, int64_t depth) { return model.num_layers + depth - 1; }

}  // namespace

MtpModule::MtpModule(const ModelConfig& model, const ParameterStore& store, int64_t depth, const RopeTable& rope,
                     ExpertExchange* experts, TensorParallel tp)
    : embedding_(store["model.embed_tokens.weight"], model.vocab_size, tp),
      embedding_norm_(store[layer_prefix(mtp_layer(model, depth)) + "enorm.weight"]),
      hidden_norm_(store[layer_prefix(mtp_layer(model, depth)) + "hnorm.weight"]),
      projection_(store[layer_prefix(mtp_layer(model, depth)) + "eh_proj.weight"]),
      block_(model, store, mtp_layer(model, depth), rope, experts, tp),
      head_(model, store, layer_prefix(mtp_layer(model, depth)) + "shared_head.norm.weight", tp),
      norm_eps_(static_cast<float>(model.norm_eps)) {}

void MtpModule::forward(Context& ctx, const Tensor& previous, const Tensor& ids, const Tensor& targets,
                        const Tensor& positions, int64_t seq_len, const Tensor& loss_sum,
                        std::optional<float> loss_grad) const {
  int64_t tokens = previous.size(0), hidden = previous.size(1);
  Device device = previous.device();
  ctx.ids = ids;
  ctx.embedded = OwnedTensor(previous.shape(), DType::f32, device);
  embedding_.forward(ctx.embedded, ids);
  ctx.previous = OwnedTensor(previous.shape(), DType::f32, device);
  copy_tensor_async(ctx.previous, previous);

  OwnedTensor normed(previous.shape(), projection_.input_dtype(), device);  // [T, H]
  OwnedTensor concatenated(Shape{tokens, 2 * hidden}, projection_.input_dtype(), device);  // [T, 2H]
  ctx.embedded_rstd = OwnedTensor(Shape{tokens}, DType::f32, device);
  rmsnorm_forward(normed, ctx.embedded_rstd, ctx.embedded, embedding_norm_.value, norm_eps_);
  copy_columns(concatenated, normed, {.dst_offset = 0, .src_offset = 0, .width = hidden});
  ctx.previous_rstd = OwnedTensor(Shape{tokens}, DType::f32, device);
  rmsnorm_forward(normed, ctx.previous_rstd, previous, hidden_norm_.value, norm_eps_);
  copy_columns(concatenated, normed, {.dst_offset = hidden, .src_offset = 0, .width = hidden});

  ctx.projected = OwnedTensor(previous.shape(), DType::f32, device);
  projection_.forward(ctx.projected, std::move(concatenated), ctx.projection_input);
  ctx.output = OwnedTensor(previous.shape(), DType::f32, device);
  block_.forward(ctx.block, ctx.output, ctx.projected, positions, seq_len);
  head_.forward(ctx.head, ctx.output, targets, loss_sum, loss_grad);
}

void MtpModule::backward_input(Context& ctx, const Tensor& d_previous, const Tensor& d_output,
                               float balance_loss_grad) const {
  int64_t hidden = d_previous.size(1);
  Device device = d_previous.device();
  OwnedTensor d_block_output(d_previous.shape(), DType::f32, device);
  head_.backward_input(ctx.head, d_block_output);
  if (d_output.defined() && d_output.numel() > 0) add_scaled(d_block_output, d_output);

  OwnedTensor d_projected(d_previous.shape(), DType::f32, device);  // [T, H]
  // [T, H] the same rounded to bf16 by the block's input norm when eh_proj's GEMMs read that (bf16 compute, no FP8:
  // prepare_output_grad would round d_projected to it), else empty
  bool reads_bf16 = projection_.compute_dtype() == DType::bf16 && !projection_.uses_fp8();
  OwnedTensor d_projected_bf16 = reads_bf16 ? OwnedTensor(d_previous.shape(), DType::bf16, device) : OwnedTensor();
  block_.backward_input(ctx.block, d_projected, d_block_output, balance_loss_grad, {}, d_projected_bf16);
  ctx.d_projected = projection_.prepare_output_grad(reads_bf16 ? std::move(d_projected_bf16) : std::move(d_projected));
  OwnedTensor d_concatenated(Shape{d_previous.size(0), 2 * hidden}, DType::f32, device);
  projection_.backward_input(d_concatenated, ctx.d_projected);

  OwnedTensor d_normed(d_previous.shape(), DType::f32, device);
  copy_columns(d_normed, d_concatenated, {.dst_offset = 0, .src_offset = hidden, .width = hidden});
  rmsnorm_backward(d_previous, hidden_norm_.grad, d_normed, ctx.previous, hidden_norm_.value, ctx.previous_rstd,
                   {.weight_grad_beta = hidden_norm_.take_grad_beta()});
  copy_columns(d_normed, d_concatenated, {.dst_offset = 0, .src_offset = 0, .width = hidden});
  ctx.d_embedded = OwnedTensor(d_previous.shape(), DType::f32, device);
  rmsnorm_backward(ctx.d_embedded, embedding_norm_.grad, d_normed, ctx.embedded, embedding_norm_.value,
                   ctx.embedded_rstd, {.weight_grad_beta = embedding_norm_.take_grad_beta()});
}

void MtpModule::backward_weight(Context& ctx) const {
  block_.backward_weight(ctx.block);
  projection_.backward_weight(ctx.d_projected, ctx.projection_input);
  embedding_.backward(ctx.d_embedded, ctx.ids);
  ctx = Context{};
}

}  // namespace hai
