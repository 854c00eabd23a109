#include "model/output_head.h"

#include "framework/device/cross_entropy.h"
#include "framework/device/elementwise.h"
#include "framework/device/rmsnorm.h"

namespace hai {

OutputHead::OutputHead(const ModelConfig& model, const ParameterStore& store, const std::string& norm_name)
    : norm_(store[norm_name]), head_(store["lm_head.weight"]), norm_eps_(static_cast<float>(model.norm_eps)) {}

void OutputHead::forward(Context& ctx, const Tensor& h, const Tensor& targets, const Tensor& loss_sum) const {
  int64_t tokens = h.size(0);
  Device device = h.device();
  ctx.input = OwnedTensor(h.shape(), DType::f32, device);
  copy_tensor_async(ctx.input, h);
  ctx.normed = OwnedTensor(h.shape(), DType::f32, device);
  ctx.rstd = OwnedTensor(Shape{tokens}, DType::f32, device);
  rmsnorm_forward(ctx.normed, ctx.rstd, h, norm_.value, norm_eps_);
  ctx.logits = OwnedTensor(Shape{tokens, head_.out_features()}, DType::f32, device);
  head_.forward(ctx.logits, ctx.normed, ctx.head_input);
  ctx.targets = targets;

  OwnedTensor losses(Shape{tokens}, DType::f32, device);  // [T]
  cross_entropy_forward(losses, ctx.logits, targets);
  accumulate_sum(loss_sum, losses);
}

void OutputHead::backward_input(Context& ctx, const Tensor& d_h, float loss_grad,
                                const Tensor& d_normed_extra) const {
  cross_entropy_backward(ctx.logits, ctx.logits, ctx.targets, loss_grad);  // logits now hold d_logits
  OwnedTensor d_normed(ctx.normed.shape(), DType::f32, d_h.device());
  head_.backward_input(d_normed, ctx.logits);
  if (d_normed_extra.defined() && d_normed_extra.numel() > 0) add_scaled(d_normed, d_normed_extra);
  rmsnorm_backward(d_h, norm_.grad, d_normed, ctx.input, norm_.value, ctx.rstd);
}

void OutputHead::backward_weight(Context& ctx) const {
  head_.backward_weight(ctx.logits, ctx.head_input);
  ctx = Context{};
}

}  // namespace hai
