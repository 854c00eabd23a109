#include "model/deepseek_v3_model.h"

#include "framework/device/cross_entropy.h"
#include "framework/device/embedding.h"
#include "framework/device/expert_load.h"
#include "model/parameters.h"

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

// Everything one micro-batch's forward keeps for its backward. T = B * S tokens, H = hidden size.
struct DeepseekV3Model::Pass {
  int64_t seq_len = 0;
  OwnedTensor inputs;     // [T] i32 tokens[:, :S]
  OwnedTensor targets;    // [T] i32 tokens[:, 1:]
  OwnedTensor positions;  // [T] i32 t % S
  std::vector<OwnedTensor> mtp_ids;      // [D][T] i32 t_{i+k} (0 past the window)
  std::vector<OwnedTensor> mtp_targets;  // [D][T] i32 t_{i+k+1} or kIgnoreTarget
  std::vector<OwnedTensor> hidden;       // [L + 1][T, H]: the embedding output, then each layer's output
  std::vector<DecoderLayer::Context> layers;
  OutputHead::Context head;
  std::vector<MtpModule::Context> mtp;
  MicroBatchLosses losses;
};

namespace {

RopeSettings rope_settings(const ModelConfig& model) { return mla_rope_settings(model); }

// Fills the pass's token tensors from tokens [B, S + 1].
void split_tokens(const Tensor& tokens, int64_t mtp_depth, std::vector<OwnedTensor>& ids,
                  std::vector<OwnedTensor>& targets, OwnedTensor& positions) {
  int64_t batch = tokens.size(0), seq_len = tokens.size(1) - 1, count = batch * seq_len;
  const int32_t* window = tokens.data<int32_t>();
  ids.clear();
  targets.clear();
  // Depth 0 is the main model: ids t_i, targets t_{i+1}; depth k: ids t_{i+k}, targets t_{i+k+1}.
  for (int64_t depth = 0; depth <= mtp_depth; ++depth) {
    OwnedTensor depth_ids(Shape{count}, DType::i32), depth_targets(Shape{count}, DType::i32);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < seq_len; ++i) {
        int64_t t = b * seq_len + i, id = i + depth, target = i + depth + 1;
        depth_ids.data<int32_t>()[t] = id <= seq_len ? window[b * (seq_len + 1) + id] : 0;
        depth_targets.data<int32_t>()[t] = target <= seq_len ? window[b * (seq_len + 1) + target] : kIgnoreTarget;
      }
    }
    ids.push_back(std::move(depth_ids));
    targets.push_back(std::move(depth_targets));
  }
  positions = OwnedTensor(Shape{count}, DType::i32);
  for (int64_t t = 0; t < count; ++t) positions.data<int32_t>()[t] = static_cast<int32_t>(t % seq_len);
}

}  // namespace

DeepseekV3Model::DeepseekV3Model(const ModelConfig& model, const ParameterStore& store)
    : config_(model), store_(store) {
  RopeSettings settings = rope_settings(model);
  rope_cos_ = OwnedTensor(Shape{settings.max_positions, settings.rope_dim / 2}, DType::f32);
  rope_sin_ = OwnedTensor(Shape{settings.max_positions, settings.rope_dim / 2}, DType::f32);
  rope_ = RopeTable{rope_cos_, rope_sin_};
  fill_rope_table(rope_, settings);

  for (int64_t layer = 0; layer < model.num_layers; ++layer) {
    layers_.push_back(std::make_unique<DecoderLayer>(model, store, layer, rope_));
    if (layers_.back()->moe()) moe_layer_indices_.push_back(layer);
  }
  head_ = std::make_unique<OutputHead>(model, store, "model.norm.weight");
  for (int64_t depth = 1; depth <= model.mtp_depth; ++depth) {
    mtp_.push_back(std::make_unique<MtpModule>(model, store, depth, rope_));
    if (mtp_.back()->block().moe()) moe_layer_indices_.push_back(model.num_layers + depth - 1);
  }
  expert_load_ = OwnedTensor(Shape{static_cast<int64_t>(moe_layer_indices_.size()), model.moe.routed_experts},
                             DType::i32);
}

DeepseekV3Model::~DeepseekV3Model() = default;

DeepseekV3Model::Pass DeepseekV3Model::forward(const Tensor& tokens) {
  HAI_CHECK(tokens.rank() == 2 && tokens.size(1) >= 2, "tokens must be [B, S + 1], got {}", tokens.str());
  Pass pass;
  pass.seq_len = tokens.size(1) - 1;
  std::vector<OwnedTensor> ids, targets;
  split_tokens(tokens, config_.mtp_depth, ids, targets, pass.positions);
  pass.inputs = std::move(ids[0]);
  pass.targets = std::move(targets[0]);
  for (int64_t depth = 1; depth <= config_.mtp_depth; ++depth) {
    pass.mtp_ids.push_back(std::move(ids[depth]));
    pass.mtp_targets.push_back(std::move(targets[depth]));
  }

  int64_t count = pass.inputs.numel();
  Shape hidden_shape{count, config_.hidden_size};
  pass.hidden.emplace_back(hidden_shape, DType::f32);
  embedding_forward(pass.hidden[0], store_["model.embed_tokens.weight"].value, pass.inputs);
  pass.layers.resize(layers_.size());
  int64_t moe_row = 0;
  for (size_t layer = 0; layer < layers_.size(); ++layer) {
    pass.hidden.emplace_back(hidden_shape, DType::f32);
    layers_[layer]->forward(pass.layers[layer], pass.hidden[layer + 1], pass.hidden[layer], pass.positions,
                            pass.seq_len);
    if (const MoeLayer* moe = layers_[layer]->moe()) {
      moe->accumulate_load(pass.layers[layer].moe, expert_load_row(moe_row));
      ++moe_row;
      pass.losses.balance += layers_[layer]->balance_loss(pass.layers[layer]);
    }
  }
  pass.losses.lm = head_->forward(pass.head, pass.hidden.back(), pass.targets);

  pass.mtp.resize(mtp_.size());
  const Tensor* previous = &pass.head.normed.tensor();
  for (size_t depth = 0; depth < mtp_.size(); ++depth) {
    MtpModule::Context& ctx = pass.mtp[depth];
    pass.losses.mtp.push_back(mtp_[depth]->forward(ctx, *previous, pass.mtp_ids[depth], pass.mtp_targets[depth],
                                                   pass.positions, pass.seq_len));
    const DecoderLayer& block = mtp_[depth]->block();
    if (const MoeLayer* moe = block.moe()) {
      moe->accumulate_load(ctx.block.moe, expert_load_row(moe_row));
      ++moe_row;
      pass.losses.balance += block.balance_loss(ctx.block);
    }
    previous = &ctx.output.tensor();
  }
  return pass;
}

void DeepseekV3Model::backward(Pass& pass, float grad_scale) {
  Shape hidden_shape{pass.inputs.numel(), config_.hidden_size};
  // MTP modules, deepest first: module k receives d h_k from module k + 1; module 1 yields d h_0.
  OwnedTensor d_next;
  float mtp_weight = config_.mtp_depth > 0 ? static_cast<float>(config_.mtp_loss_weight / config_.mtp_depth) : 0;
  for (size_t depth = mtp_.size(); depth-- > 0;) {
    OwnedTensor d_previous(hidden_shape, DType::f32);
    int64_t counted = pass.losses.mtp[depth].tokens;
    float loss_grad = counted > 0 ? grad_scale * mtp_weight / static_cast<float>(counted) : 0.0f;
    mtp_[depth]->backward_input(pass.mtp[depth], d_previous, d_next, loss_grad, grad_scale);
    d_next = std::move(d_previous);
  }

  OwnedTensor d_hidden(hidden_shape, DType::f32);
  int64_t counted = pass.losses.lm.tokens;
  float lm_grad = counted > 0 ? grad_scale / static_cast<float>(counted) : 0.0f;
  head_->backward_input(pass.head, d_hidden, lm_grad, d_next);
  for (size_t layer = layers_.size(); layer-- > 0;) {
    OwnedTensor d_input(hidden_shape, DType::f32);
    layers_[layer]->backward_input(pass.layers[layer], d_input, d_hidden, grad_scale);
    d_hidden = std::move(d_input);
  }

  // Weight gradients (W), after every input gradient (B).
  for (size_t depth = 0; depth < mtp_.size(); ++depth) mtp_[depth]->backward_weight(pass.mtp[depth]);
  head_->backward_weight(pass.head);
  for (size_t layer = 0; layer < layers_.size(); ++layer) layers_[layer]->backward_weight(pass.layers[layer]);
  embedding_backward(store_["model.embed_tokens.weight"].grad, d_hidden, pass.inputs);
}

MicroBatchLosses DeepseekV3Model::train_micro_batch(const Tensor& tokens, float grad_scale) {
  Pass pass = forward(tokens);
  backward(pass, grad_scale);
  return pass.losses;
}

MicroBatchLosses DeepseekV3Model::evaluate(const Tensor& tokens) {
  OwnedTensor saved_load(expert_load_.shape(), DType::i32);
  copy_tensor(saved_load, expert_load_);
  MicroBatchLosses losses = forward(tokens).losses;
  copy_tensor(expert_load_, saved_load);  // evaluation does not count towards balancing
  return losses;
}

Tensor DeepseekV3Model::expert_load_row(int64_t row) const {
  return expert_load_.tensor().slice(row, row + 1).reshape(Shape{config_.moe.routed_experts});
}

void DeepseekV3Model::reset_expert_load() {
  std::fill_n(expert_load_.data<int32_t>(), expert_load_.numel(), 0);
}

void DeepseekV3Model::update_router_biases(float gamma) {
  for (size_t row = 0; row < moe_layer_indices_.size(); ++row) {
    const Parameter& bias = store_[layer_prefix(moe_layer_indices_[row]) + "mlp.gate.e_score_correction_bias"];
    update_router_bias(bias.value, expert_load_row(static_cast<int64_t>(row)), gamma);
  }
}

}  // namespace hai
