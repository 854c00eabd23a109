#include "model/output_head.h"

#include <algorithm>
#include <utility>

#include "framework/device/cross_entropy.h"
#include "framework/device/elementwise.h"
#include "framework/device/rmsnorm.h"
#include "model/vocab_parallel.h"
#include "parallel/sequence_parallel.h"

namespace hai {

int64_t head_chunk_tokens(const ModelConfig& model) {
  if (model.head_chunk_tokens > 0) return model.head_chunk_tokens;
  constexpr int64_t kAlignment = 128;
  int64_t fitting = kHeadChunkLogitBytes / (model.vocab_size * static_cast<int64_t>(sizeof(float)));
  if (fitting > kAlignment) return fitting / kAlignment * kAlignment;
  return std::max<int64_t>(fitting, 1);
}

float token_loss_grad(float grad_scale, double weight, int64_t counted) {
  if (counted <= 0) return 0.0f;
  return grad_scale * static_cast<float>(weight) / static_cast<float>(counted);
}

OutputHead::OutputHead(const ModelConfig& model, const ParameterStore& store, const std::string& norm_name,
                       TensorParallel tp)
    : norm_(store[norm_name]),
      head_(store["lm_head.weight"]),
      norm_eps_(static_cast<float>(model.norm_eps)),
      chunk_tokens_(head_chunk_tokens(model)),
      tp_(tp),
      vocab_first_(tp.range(model.vocab_size).begin) {
  HAI_CHECK(head_.out_features() == tp.range(model.vocab_size).size,
            "lm_head.weight: {} rows held where tp rank {} of {} holds {} of the vocabulary of {}",
            head_.out_features(), tp.rank(), tp.size(), tp.range(model.vocab_size).size, model.vocab_size);
}

void OutputHead::forward(Context& ctx, const Tensor& h, const Tensor& targets, const Tensor& loss_sum,
                         std::optional<float> loss_grad) const {
  Device device = h.device();
  ctx.normed = OwnedTensor(h.shape(), DType::f32, device);
  OwnedTensor rstd(Shape{h.size(0)}, DType::f32, device);  // [T_r]
  rmsnorm_forward(ctx.normed, rstd, h, norm_.value, norm_eps_);
  OwnedTensor gathered;
  // [T, H] the vocabulary-parallel region's input: every tp rank's tokens under sequence parallelism
  Tensor normed = all_gather_sequence(tp_, ctx.normed, gathered);
  int64_t tokens = normed.size(0);
  OwnedTensor d_normed;  // [T, H] this rank's rows of lm_head's part of the gradient of every token
  if (loss_grad) {
    ctx.input = OwnedTensor(h.shape(), DType::f32, device);
    copy_tensor_async(ctx.input, h);
    ctx.rstd = std::move(rstd);
    ctx.d_normed = OwnedTensor(h.shape(), DType::f32, device);
    d_normed = tp_.splits_sequence() ? OwnedTensor(normed.shape(), DType::f32, device) : OwnedTensor();
  }
  Tensor d_normed_rows = d_normed.tensor().raw() != nullptr ? d_normed.tensor() : ctx.d_normed.tensor();

  int64_t chunk_tokens = std::min(chunk_tokens_, tokens);
  OwnedTensor logits(Shape{chunk_tokens, head_.out_features()}, DType::f32, device);  // [C, V]
  OwnedTensor losses(Shape{chunk_tokens}, DType::f32, device);                        // [C]
  // NOTE: in bf16 the loss gradient is written in bf16 for the head's two GEMMs (no fp32 copy, no two casts);
  // otherwise it overwrites the logits (fp16: the GEMMs round it themselves).
  OwnedTensor d_logits;  // [C, V]
  if (loss_grad && head_.output_grad_dtype() == DType::bf16) {
    d_logits = OwnedTensor(logits.tensor().shape(), head_.output_grad_dtype(), device);
  }
  Tensor gradient_buffer = d_logits.tensor().raw() != nullptr ? d_logits.tensor() : logits.tensor();
  for (int64_t begin = 0; begin < tokens; begin += chunk_tokens) {
    int64_t end = std::min(begin + chunk_tokens, tokens);
    Chunk chunk{.normed = normed.slice(begin, end),
                .targets = targets.slice(begin, end),
                .logits = logits.tensor().slice(0, end - begin),
                .d_logits = loss_grad ? gradient_buffer.slice(0, end - begin) : Tensor(),
                .losses = losses.tensor().slice(0, end - begin),
                .d_normed = loss_grad ? d_normed_rows.slice(begin, end) : Tensor()};
    forward_chunk(chunk, loss_sum, loss_grad);
  }
  // from this rank's rows of lm_head, summed over the tp ranks: the region's entry
  if (loss_grad) reduce_scatter_sequence(tp_, ctx.d_normed, d_normed_rows, /*accumulate=*/false);
}

void OutputHead::forward_chunk(const Chunk& chunk, const Tensor& loss_sum, std::optional<float> loss_grad) const {
  Linear::PreparedInput input = head_.prepare_input(chunk.normed);  // [c, H] in the compute dtype
  head_.forward(chunk.logits, input);
  vocab_parallel_cross_entropy(tp_, vocab_first_, chunk.losses, chunk.d_logits, chunk.logits, chunk.targets,
                               loss_grad);
  accumulate_sum(loss_sum, chunk.losses);
  if (!loss_grad) return;
  head_.backward_input(chunk.d_normed, chunk.d_logits);
  head_.backward_weight(chunk.d_logits, input.saved);
}

void OutputHead::backward_input(Context& ctx, const Tensor& d_h, const Tensor& d_normed_extra) const {
  HAI_CHECK(ctx.d_normed.tensor().shape() == d_h.shape(),
            "output head: backward_input of {} needs a training forward (with a loss gradient) of as many tokens",
            d_h.str());
  if (d_normed_extra.defined() && d_normed_extra.numel() > 0) add_scaled(ctx.d_normed, d_normed_extra);
  rmsnorm_backward(d_h, norm_.grad, ctx.d_normed, ctx.input, norm_.value, ctx.rstd,
                   {.weight_grad_beta = norm_.take_grad_beta()});
  ctx = Context{};
}

}  // namespace hai
