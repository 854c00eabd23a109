#include "model/pipeline_stage.h"

#include <fmt/format.h>

#include "model/micro_batch_losses.h"
#include "model/parameters.h"
#include "parallel/pipeline/stage_partition.h"
#include "parallel/sequence_parallel.h"

namespace hai {

namespace {

// Layers per stage: the explicit counts (checked), or balanced by the cost model of pipeline_stages.
std::vector<int> stage_layer_counts(const ModelConfig& model, int stages, const std::vector<int64_t>& explicit_counts) {
  const int layers = static_cast<int>(model.num_layers);
  if (!explicit_counts.empty()) {
    std::vector<int> counts(explicit_counts.begin(), explicit_counts.end());
    check_stage_layers(counts, layers, stages);
    return counts;
  }
  std::vector<double> costs(static_cast<size_t>(layers), 1.0);
  if (!costs.empty()) costs.back() += 1.0 + static_cast<double>(model.mtp_depth);
  return balanced_stage_layers(costs, stages);
}

}  // namespace

std::vector<StageLayers> pipeline_stages(const ModelConfig& model, int stages,
                                         const std::vector<int64_t>& layers_per_stage) {
  std::vector<int> counts = stage_layer_counts(model, stages, layers_per_stage);
  std::vector<StageLayers> layers;
  int64_t first_layer = 0;
  for (int stage = 0; stage < stages; ++stage) {
    int64_t count = counts[static_cast<size_t>(stage)];
    layers.push_back({.first_layer = first_layer, .layers = count, .first = stage == 0, .last = stage == stages - 1});
    first_layer += count;
  }
  return layers;
}

PipelineStage::PipelineStage(const ModelConfig& model, const ParameterStore& store, const StageLayers& layers,
                             const RopeTable& rope, ExpertExchange* experts, TensorParallel tp)
    : config_(model),
      layers_(layers),
      device_(store.values().device()),
      tp_(tp) {
  if (layers.first) embedding_.emplace(store["model.embed_tokens.weight"], model.vocab_size, tp);
  HAI_CHECK(layers.layers >= 1 && layers.first_layer >= 0 && layers.first_layer + layers.layers <= model.num_layers,
            "pipeline stage: layers [{}, {}) outside the model's {}", layers.first_layer,
            layers.first_layer + layers.layers, model.num_layers);
  for (int64_t layer = layers.first_layer; layer < layers.first_layer + layers.layers; ++layer) {
    blocks_.push_back(std::make_unique<DecoderLayer>(model, store, layer, rope, experts, tp));
  }
  if (!layers.last) return;
  head_ = std::make_unique<OutputHead>(model, store, "model.norm.weight", tp);
  for (int64_t depth = 1; depth <= model.mtp_depth; ++depth) {
    mtp_.push_back(std::make_unique<MtpModule>(model, store, depth, rope, experts, tp));
  }
}

Shape PipelineStage::hidden_shape(int64_t tokens) const {
  return Shape{sequence_rows(tp_, tokens), config_.hidden_size};
}

Tensor PipelineStage::expert_load_row(const Tensor& expert_load, int64_t layer) const {
  // NOTE: every block from first_dense_layers on (MTP blocks included) is an MoE layer, so rows follow layers.
  int64_t row = layer - config_.first_dense_layers;
  return expert_load.slice(row, row + 1).reshape(Shape{config_.moe.routed_experts});
}

void PipelineStage::forward(Context& ctx, const MicroBatchInputs& batch, const Tensor& input, const Tensor& output,
                            const Tensor& loss_sums, const Tensor& expert_load, std::optional<float> grad_scale) const {
  Shape hidden_shape = this->hidden_shape(batch.inputs.numel());
  // [T, H] the embedding's output, then each layer's: handed over to the next layer, which keeps it as its input.
  // NOTE: only the head's input stays here to the end of F: the earlier hidden states go with their layers.
  OwnedTensor hidden;
  if (layers_.first) {
    need(kEmbeddingBucket);
    mark_phase(profiler_, "forward.embedding");
    hidden = OwnedTensor(hidden_shape, DType::f32, device_);
    embedding_->forward(hidden, batch.inputs);
    record_memory_point(profiler_, "embedding", "embedding");
  }
  ctx.layers.resize(blocks_.size());
  for (size_t index = 0; index < blocks_.size(); ++index) {
    int64_t layer = layers_.first_layer + static_cast<int64_t>(index);
    bool writes_output = index + 1 == blocks_.size() && !layers_.last;
    OwnedTensor out = writes_output ? OwnedTensor() : OwnedTensor(hidden_shape, DType::f32, device_);  // [T, H]
    Tensor out_view = writes_output ? output : out.tensor();
    const DecoderLayer& block = *blocks_[index];
    need(layer_bucket(layer));
    if (index == 0 && !layers_.first) {
      block.forward(ctx.layers[index], out_view, input, batch.positions, batch.seq_len);  // keeps a copy of input
    } else {
      block.forward(ctx.layers[index], out_view, std::move(hidden), batch.positions, batch.seq_len);
    }
    hidden = std::move(out);
    if (const MoeLayer* moe = block.moe()) {
      if (grad_scale) moe->accumulate_load(ctx.layers[index].moe, expert_load_row(expert_load, layer));
      block.accumulate_balance_loss(ctx.layers[index], balance_loss_slot(loss_sums));
    }
    if (profiler_) profiler_->record_memory(fmt::format("layer.{}", layer), block.moe() ? "moe" : "dense");
  }
  if (layers_.last) forward_head(ctx, batch, hidden, loss_sums, expert_load, grad_scale);
}

void PipelineStage::forward_head(Context& ctx, const MicroBatchInputs& batch, const Tensor& hidden,
                                 const Tensor& loss_sums, const Tensor& expert_load,
                                 std::optional<float> grad_scale) const {
  auto loss_grad = [&](double weight, int64_t counted) -> std::optional<float> {
    if (!grad_scale) return std::nullopt;
    return token_loss_grad(*grad_scale, weight, counted);
  };
  need(kHeadBucket);
  mark_phase(profiler_, "forward.head_loss");
  head_->forward(ctx.head, hidden, batch.targets, lm_loss_slot(loss_sums), loss_grad(1.0, batch.counted.lm));
  record_memory_point(profiler_, "head", "head");

  ctx.mtp.resize(mtp_.size());
  double mtp_weight = config_.mtp_depth > 0 ? config_.mtp_loss_weight / static_cast<double>(config_.mtp_depth) : 0;
  const Tensor* previous = &ctx.head.normed.tensor();  // [T, H] h_0, then each module's h_k
  for (size_t index = 0; index < mtp_.size(); ++index) {
    int64_t depth = static_cast<int64_t>(index) + 1;
    MtpModule::Context& module = ctx.mtp[index];
    need(layer_bucket(config_.num_layers + depth - 1));
    mark_phase(profiler_, "forward.mtp");
    mtp_[index]->forward(module, *previous, batch.mtp_ids[index], batch.mtp_targets[index], batch.positions,
                         batch.seq_len, mtp_loss_slot(loss_sums, depth),
                         loss_grad(mtp_weight, batch.counted.mtp[index]));
    const DecoderLayer& block = mtp_[index]->block();
    if (const MoeLayer* moe = block.moe()) {
      if (grad_scale) {
        moe->accumulate_load(module.block.moe, expert_load_row(expert_load, config_.num_layers + depth - 1));
      }
      block.accumulate_balance_loss(module.block, balance_loss_slot(loss_sums));
    }
    previous = &module.output.tensor();
    if (profiler_) profiler_->record_memory(fmt::format("mtp.{}", depth), "mtp");
  }
}

void PipelineStage::backward_input(Context& ctx, const MicroBatchInputs& batch, const Tensor& d_output,
                                   const Tensor& d_input, float grad_scale) const {
  OwnedTensor d_head;  // [T, H] last stage: the gradient of the last layer's output
  if (layers_.last) d_head = backward_head(ctx, batch, grad_scale);
  OwnedTensor d_embedded =
      backward_layers(ctx, std::move(d_head), d_output, d_input, grad_scale, /*with_weights=*/false, nullptr);
  if (layers_.first) ctx.d_embedded = std::move(d_embedded);
}

void PipelineStage::backward(Context& ctx, const MicroBatchInputs& batch, const Tensor& d_output,
                             const Tensor& d_input, float grad_scale, const GradientsFinal& on_final) const {
  OwnedTensor d_head;  // [T, H] last stage: the gradient of the last layer's output
  if (layers_.last) {
    d_head = backward_head(ctx, batch, grad_scale);
    if (on_final) on_final(kHeadBucket);
    backward_mtp_weights(ctx, on_final);
  }
  ctx.d_embedded =
      backward_layers(ctx, std::move(d_head), d_output, d_input, grad_scale, /*with_weights=*/true, on_final);
  // NOTE: the embedding's gradient is complete after the MTP modules' (their embeddings') and the input's.
  if (layers_.first) backward_embedding(ctx, batch, on_final);
  ctx = Context{};
}

OwnedTensor PipelineStage::backward_layers(Context& ctx, OwnedTensor d_hidden, const Tensor& d_output,
                                           const Tensor& d_input, float grad_scale, bool with_weights,
                                           const GradientsFinal& on_final) const {
  Tensor d_above = layers_.last ? d_hidden.tensor() : d_output;  // [T, H] the current layer's output gradient
  Shape hidden_shape = d_above.shape();
  OwnedTensor d_above_bf16;  // [T, H] d_above rounded to bf16 by the layer above, or empty
  for (size_t index = blocks_.size(); index-- > 0;) {
    bool writes_input = index == 0 && !layers_.first;
    OwnedTensor d_x = writes_input ? OwnedTensor() : OwnedTensor(hidden_shape, DType::f32, device_);  // [T, H]
    Tensor d_x_view = writes_input ? d_input : d_x.tensor();
    // [T, H] d_x rounded to bf16 by this layer's input norm when the layer below reads that, else empty
    bool below_takes_bf16 = index > 0 && blocks_[index - 1]->takes_bf16_output_grad();
    OwnedTensor d_x_bf16 = below_takes_bf16 ? OwnedTensor(hidden_shape, DType::bf16, device_) : OwnedTensor();
    blocks_[index]->backward_input(ctx.layers[index], d_x_view, d_above, grad_scale, std::move(d_above_bf16),
                                   d_x_bf16);
    if (with_weights) {
      blocks_[index]->backward_weight(ctx.layers[index]);
      if (on_final) on_final(layer_bucket(layers_.first_layer + static_cast<int64_t>(index)));
    }
    d_hidden = std::move(d_x);  // NOTE: releases the output gradient just read
    d_above = d_x_view;
    d_above_bf16 = std::move(d_x_bf16);
  }
  return layers_.first ? std::move(d_hidden) : OwnedTensor();
}

OwnedTensor PipelineStage::backward_head(Context& ctx, const MicroBatchInputs& batch, float grad_scale) const {
  Shape hidden_shape = this->hidden_shape(batch.inputs.numel());
  // MTP modules, deepest first: module k receives d h_k from module k + 1; module 1 yields d h_0.
  mark_phase(profiler_, "backward_input.mtp");
  OwnedTensor d_next;
  for (size_t depth = mtp_.size(); depth-- > 0;) {
    OwnedTensor d_previous(hidden_shape, DType::f32, device_);  // [T, H]
    mtp_[depth]->backward_input(ctx.mtp[depth], d_previous, d_next, grad_scale);
    d_next = std::move(d_previous);
  }
  mark_phase(profiler_, "backward_input.head_loss");
  OwnedTensor d_hidden(hidden_shape, DType::f32, device_);  // [T, H]
  head_->backward_input(ctx.head, d_hidden, d_next);
  return d_hidden;
}

void PipelineStage::backward_mtp_weights(Context& ctx, const GradientsFinal& on_final) const {
  mark_phase(profiler_, "backward_weight.mtp");
  for (size_t depth = 0; depth < mtp_.size(); ++depth) {
    mtp_[depth]->backward_weight(ctx.mtp[depth]);
    if (on_final) on_final(layer_bucket(config_.num_layers + static_cast<int64_t>(depth)));
  }
}

void PipelineStage::backward_embedding(Context& ctx, const MicroBatchInputs& batch,
                                       const GradientsFinal& on_final) const {
  mark_phase(profiler_, "backward_weight.embedding");
  embedding_->backward(ctx.d_embedded, batch.inputs);
  if (on_final) on_final(kEmbeddingBucket);
}

void PipelineStage::set_recompute(RecomputeMode mode) {
  for (const std::unique_ptr<DecoderLayer>& block : blocks_) block->set_recompute(mode);
  for (const std::unique_ptr<MtpModule>& module : mtp_) module->set_recompute(mode);
}

void PipelineStage::set_profiler(StepProfiler* profiler) {
  profiler_ = profiler;
  for (const std::unique_ptr<DecoderLayer>& block : blocks_) block->set_profiler(profiler);
}

void PipelineStage::backward_weight(Context& ctx, const MicroBatchInputs& batch,
                                    const GradientsFinal& on_final) const {
  // The order of backward(): the head's bucket (its W ran in forward, its B in B), MTP modules, layers (here the
  // first first: distinct parameters), embedding.
  if (layers_.last) {
    if (on_final) on_final(kHeadBucket);
    backward_mtp_weights(ctx, on_final);
  }
  for (size_t index = 0; index < blocks_.size(); ++index) {
    blocks_[index]->backward_weight(ctx.layers[index]);
    if (on_final) on_final(layer_bucket(layers_.first_layer + static_cast<int64_t>(index)));
  }
  if (layers_.first) backward_embedding(ctx, batch, on_final);
  ctx = Context{};
}

}  // namespace hai
