#include "model/deepseek_v3_model.h"

#include <fmt/format.h>

#include "framework/device/cross_entropy.h"
#include "framework/device/expert_load.h"
#include "model/parameters.h"
#include "model/router_biases.h"

namespace hai {

double MicroBatchLosses::mtp_mean() const {
  if (mtp.empty()) return 0.0;
  double sum = 0;
  for (const TokenLoss& loss : mtp) sum += loss.mean();
  return sum / static_cast<double>(mtp.size());
}

double MicroBatchLosses::objective(double mtp_loss_weight) const {
  return lm.mean() + mtp_loss_weight * mtp_mean() + balance;
}

namespace {

constexpr int64_t kLmSlot = 0;
constexpr int64_t kBalanceSlot = 1;
constexpr int64_t kFirstMtpSlot = 2;

// Slot `slot` of the loss sums, as [1].
Tensor loss_slot(const Tensor& loss_sums, int64_t slot) { return loss_sums.slice(slot, slot + 1); }

}  // namespace

int64_t loss_slots(int64_t mtp_depth) { return kFirstMtpSlot + mtp_depth; }

Tensor lm_loss_slot(const Tensor& loss_sums) { return loss_slot(loss_sums, kLmSlot); }
Tensor balance_loss_slot(const Tensor& loss_sums) { return loss_slot(loss_sums, kBalanceSlot); }
Tensor mtp_loss_slot(const Tensor& loss_sums, int64_t depth) {
  return loss_slot(loss_sums, kFirstMtpSlot + depth - 1);
}

MicroBatchLosses read_losses(const Tensor& sums, const CountedTokens& counted) {
  check_shape(sums, Shape{loss_slots(static_cast<int64_t>(counted.mtp.size()))}, "loss sums");
  HAI_CHECK(sums.device().is_cpu(), "read_losses reads a host copy of the loss sums, got {}", sums.str());
  const float* values = sums.data<float>();
  MicroBatchLosses losses;
  losses.lm = {.sum = values[kLmSlot], .tokens = counted.lm};
  losses.balance = values[kBalanceSlot];
  for (size_t depth = 0; depth < counted.mtp.size(); ++depth) {
    losses.mtp.push_back({.sum = values[kFirstMtpSlot + static_cast<int64_t>(depth)], .tokens = counted.mtp[depth]});
  }
  return losses;
}

// Everything one micro-batch's forward keeps for its backward: its token rows, then for T = B * S tokens and
// H = hidden size the activations below.
struct DeepseekV3Model::Pass : MicroBatchInputs {
  // [T, H]: the last decoder layer's output, the head's input. NOTE: only the last: each layer keeps its own
  // input for its backward (decoder_layer.h), so the earlier hidden states are freed as the forward goes.
  OwnedTensor last_hidden;
  std::vector<DecoderLayer::Context> layers;
  OutputHead::Context head;
  std::vector<MtpModule::Context> mtp;
};

DeepseekV3Model::DeepseekV3Model(const ModelConfig& model, const ParameterStore& store, ExpertExchange* experts,
                                 TensorParallel tp)
    : config_(model),
      store_(store),
      rope_(model, store.values().device()),
      embedding_(store["model.embed_tokens.weight"], model.vocab_size, tp) {
  for (int64_t layer = 0; layer < model.num_layers; ++layer) {
    layers_.push_back(std::make_unique<DecoderLayer>(model, store, layer, rope_.table(), experts, tp));
    if (layers_.back()->moe()) moe_layer_indices_.push_back(layer);
  }
  head_ = std::make_unique<OutputHead>(model, store, "model.norm.weight", tp);
  for (int64_t depth = 1; depth <= model.mtp_depth; ++depth) {
    mtp_.push_back(std::make_unique<MtpModule>(model, store, depth, rope_.table(), experts, tp));
    if (mtp_.back()->block().moe()) moe_layer_indices_.push_back(model.num_layers + depth - 1);
  }
  expert_load_ = zero_tensor(Shape{static_cast<int64_t>(moe_layer_indices_.size()), model.moe.routed_experts},
                             DType::i32, device());
}

DeepseekV3Model::~DeepseekV3Model() = default;

DeepseekV3Model::Pass DeepseekV3Model::forward(const Tensor& tokens, const Tensor& loss_sums,
                                               std::optional<float> grad_scale) {
  check_shape(loss_sums, Shape{loss_slots(config_.mtp_depth)}, "loss sums");
  check_dtype(loss_sums, DType::f32, "loss sums");
  HAI_CHECK(loss_sums.device() == device(), "loss sums on {}, the model on {}", to_string(loss_sums.device()),
            to_string(device()));
  Pass pass;
  mark_phase(profiler_, "forward.inputs_upload");
  static_cast<MicroBatchInputs&>(pass) = upload_micro_batch(tokens, config_.mtp_depth, device());
  zero_fill(loss_sums);
  bool count_load = grad_scale.has_value();
  auto loss_grad = [&](double weight, int64_t counted) -> std::optional<float> {
    if (!grad_scale) return std::nullopt;
    return token_loss_grad(*grad_scale, weight, counted);
  };

  Shape hidden_shape{pass.inputs.numel(), config_.hidden_size};
  mark_phase(profiler_, "forward.embedding");
  need(kEmbeddingBucket);
  OwnedTensor hidden(hidden_shape, DType::f32, device());  // [T, H] the embedding output, then each layer's
  embedding_.forward(hidden, pass.inputs);
  record_memory_point(profiler_, "embedding", "embedding");
  pass.layers.resize(layers_.size());
  int64_t moe_row = 0;
  for (size_t layer = 0; layer < layers_.size(); ++layer) {
    OwnedTensor output(hidden_shape, DType::f32, device());  // [T, H]
    need(layer_bucket(static_cast<int64_t>(layer)));
    layers_[layer]->forward(pass.layers[layer], output, std::move(hidden), pass.positions, pass.seq_len);
    hidden = std::move(output);
    if (const MoeLayer* moe = layers_[layer]->moe()) {
      if (count_load) moe->accumulate_load(pass.layers[layer].moe, expert_load_row(moe_row));
      ++moe_row;
      layers_[layer]->accumulate_balance_loss(pass.layers[layer], loss_slot(loss_sums, kBalanceSlot));
    }
    if (profiler_) {
      profiler_->record_memory(fmt::format("layer.{}", layer), layers_[layer]->moe() ? "moe" : "dense");
    }
  }
  mark_phase(profiler_, "forward.head_loss");
  need(kHeadBucket);
  pass.last_hidden = std::move(hidden);
  head_->forward(pass.head, pass.last_hidden, pass.targets, loss_slot(loss_sums, kLmSlot),
                 loss_grad(1.0, pass.counted.lm));

  record_memory_point(profiler_, "head", "head");

  mark_phase(profiler_, "forward.mtp");
  pass.mtp.resize(mtp_.size());
  double mtp_weight = config_.mtp_depth > 0 ? config_.mtp_loss_weight / static_cast<double>(config_.mtp_depth) : 0;
  const Tensor* previous = &pass.head.normed.tensor();
  for (size_t depth = 0; depth < mtp_.size(); ++depth) {
    MtpModule::Context& ctx = pass.mtp[depth];
    need(layer_bucket(config_.num_layers + static_cast<int64_t>(depth)));
    mtp_[depth]->forward(ctx, *previous, pass.mtp_ids[depth], pass.mtp_targets[depth], pass.positions, pass.seq_len,
                         loss_slot(loss_sums, kFirstMtpSlot + static_cast<int64_t>(depth)),
                         loss_grad(mtp_weight, pass.counted.mtp[depth]));
    const DecoderLayer& block = mtp_[depth]->block();
    if (const MoeLayer* moe = block.moe()) {
      if (count_load) moe->accumulate_load(ctx.block.moe, expert_load_row(moe_row));
      ++moe_row;
      block.accumulate_balance_loss(ctx.block, loss_slot(loss_sums, kBalanceSlot));
    }
    previous = &ctx.output.tensor();
    if (profiler_) profiler_->record_memory(fmt::format("mtp.{}", depth + 1), "mtp");
  }
  return pass;
}

void DeepseekV3Model::backward(Pass& pass, float grad_scale, const GradientsFinal& on_final) {
  auto finished = [&](int bucket) {
    if (on_final) on_final(bucket);
  };
  Shape hidden_shape{pass.inputs.numel(), config_.hidden_size};
  // MTP modules, deepest first: module k receives d h_k from module k + 1; module 1 yields d h_0.
  mark_phase(profiler_, "backward_input.mtp");
  OwnedTensor d_next;
  for (size_t depth = mtp_.size(); depth-- > 0;) {
    OwnedTensor d_previous(hidden_shape, DType::f32, device());
    mtp_[depth]->backward_input(pass.mtp[depth], d_previous, d_next, grad_scale);
    d_next = std::move(d_previous);
  }

  mark_phase(profiler_, "backward_input.head_loss");
  OwnedTensor d_hidden(hidden_shape, DType::f32, device());
  head_->backward_input(pass.head, d_hidden, d_next);
  finished(kHeadBucket);
  mark_phase(profiler_, "backward_weight.mtp");
  for (size_t depth = 0; depth < mtp_.size(); ++depth) {
    mtp_[depth]->backward_weight(pass.mtp[depth]);
    finished(layer_bucket(config_.num_layers + static_cast<int64_t>(depth)));
  }
  // NOTE: each decoder layer's weight gradients (W) right after its input gradient (B), last layer first, so that
  // the layers' buckets are announced one by one over the whole backward and their reductions (data parallelism)
  // run under the layers below; what is left to reduce after the backward is the first layer's and the
  // embedding's. (The pipeline stages split B and W for their schedules; a whole model has no reason to.)
  OwnedTensor d_hidden_bf16;  // [T, H] d_hidden rounded to bf16 by the layer above, or empty
  for (size_t layer = layers_.size(); layer-- > 0;) {
    OwnedTensor d_input(hidden_shape, DType::f32, device());
    // [T, H] d_input rounded to bf16 by this layer's input norm when the layer below reads that, else empty
    bool below_takes_bf16 = layer > 0 && layers_[layer - 1]->takes_bf16_output_grad();
    OwnedTensor d_input_bf16 = below_takes_bf16 ? OwnedTensor(hidden_shape, DType::bf16, device()) : OwnedTensor();
    layers_[layer]->backward_input(pass.layers[layer], d_input, d_hidden, grad_scale, std::move(d_hidden_bf16),
                                   d_input_bf16);
    layers_[layer]->backward_weight(pass.layers[layer]);
    finished(layer_bucket(static_cast<int64_t>(layer)));
    d_hidden = std::move(d_input);
    d_hidden_bf16 = std::move(d_input_bf16);
  }
  // NOTE: the embedding's gradient is complete after the MTP modules' (their embeddings') and the input's.
  mark_phase(profiler_, "backward_weight.embedding");
  embedding_.backward(d_hidden, pass.inputs);
  finished(kEmbeddingBucket);
}

CountedTokens DeepseekV3Model::train_micro_batch(const Tensor& tokens, float grad_scale, const Tensor& loss_sums,
                                                 const GradientsFinal& on_final) {
  Pass pass = forward(tokens, loss_sums, grad_scale);
  backward(pass, grad_scale, on_final);
  return pass.counted;
}

MicroBatchLosses DeepseekV3Model::train_micro_batch(const Tensor& tokens, float grad_scale) {
  OwnedTensor loss_sums(Shape{loss_slots(config_.mtp_depth)}, DType::f32, device());
  CountedTokens counted = train_micro_batch(tokens, grad_scale, loss_sums);
  return read_back(loss_sums, counted);
}

MicroBatchLosses DeepseekV3Model::evaluate(const Tensor& tokens) {
  OwnedTensor loss_sums(Shape{loss_slots(config_.mtp_depth)}, DType::f32, device());
  CountedTokens counted = forward(tokens, loss_sums, std::nullopt).counted;
  return read_back(loss_sums, counted);
}

MicroBatchLosses DeepseekV3Model::read_back(const Tensor& loss_sums, const CountedTokens& counted) const {
  OwnedTensor host(loss_sums.shape(), DType::f32);
  copy_tensor(host, loss_sums);
  return read_losses(host, counted);
}

Tensor DeepseekV3Model::expert_load_row(int64_t row) const {
  return expert_load_.tensor().slice(row, row + 1).reshape(Shape{config_.moe.routed_experts});
}

void DeepseekV3Model::set_profiler(StepProfiler* profiler) {
  profiler_ = profiler;
  for (const std::unique_ptr<DecoderLayer>& layer : layers_) layer->set_profiler(profiler);
}

void DeepseekV3Model::set_recompute(RecomputeMode mode) {
  for (const std::unique_ptr<DecoderLayer>& layer : layers_) layer->set_recompute(mode);
  for (const std::unique_ptr<MtpModule>& module : mtp_) module->set_recompute(mode);
}

void DeepseekV3Model::reset_expert_load() { zero_fill(expert_load_); }

void DeepseekV3Model::update_router_biases(float gamma, const Tensor& update_scale) {
  hai::update_router_biases(config_, store_, expert_load(), gamma, update_scale);
}

}  // namespace hai
