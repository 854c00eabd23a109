#pragma once
// Multi-token prediction module k (docs/deepseek-v3.md "MTP, exactly"), stored as layer num_layers + k - 1:
//   e_k  = Emb(t_{i+k})                                       the main model's embedding table
//   h'_k = eh_proj(concat(enorm(e_k), hnorm(h_{k-1})))        embedding half first
//   h_k  = Block_k(h'_k)                                      a full decoder layer
//   loss = cross-entropy of Head(shared_head.norm(h_k)) against t_{i+k+1}
// h_0 is the main model's final hidden state after model.norm. T = tokens, H = hidden size.

#include <optional>

#include "model/decoder_layer.h"
#include "model/output_head.h"
#include "model/vocab_parallel.h"

namespace hai {

class MtpModule {
 public:
  // experts: the expert-parallel exchange of the block's MoE layer; null: every routed expert is local.
  MtpModule(const ModelConfig& model, const ParameterStore& store, int64_t depth, const RopeTable& rope,
            ExpertExchange* experts = nullptr, TensorParallel tp = {});

  struct Context {
    Tensor ids;                   // [T] i32 t_{i+k}, the caller's
    OwnedTensor embedded;         // [T, H] e_k
    OwnedTensor embedded_rstd;    // [T]
    OwnedTensor previous;         // [T, H] h_{k-1}
    OwnedTensor previous_rstd;    // [T]
    OwnedTensor projection_input; // [T, 2H] [enorm(e_k) | hnorm(h_{k-1})] as eh_proj keeps it
    OwnedTensor projected;        // [T, H] h'_k
    DecoderLayer::Context block;
    OwnedTensor output;           // [T, H] h_k
    OutputHead::Context head;
    Linear::PreparedOutputGrad d_projected;  // [T, H] prepared by backward_input for eh_proj's weight gradient
    OwnedTensor d_embedded;       // [T, H] saved by backward_input for the embedding gradient
  };

  // h_k = ctx.output. ids: [T] i32 t_{i+k} (any valid id where i + k is past the window: causality keeps those
  // positions from reaching counted ones); targets: [T] i32 t_{i+k+1} or kIgnoreTarget; positions: [T] i32.
  // loss_sum: [1] fp32 += the sum of this module's token losses; loss_grad: when training, the objective's
  // derivative with respect to this module's TokenLoss::sum, std::nullopt in evaluation (OutputHead::forward).
  void forward(Context& ctx, const Tensor& previous, const Tensor& ids, const Tensor& targets,
               const Tensor& positions, int64_t seq_len, const Tensor& loss_sum,
               std::optional<float> loss_grad) const;
  // d_previous: [T, H] (overwritten) <- d_output: [T, H] from module k + 1 (or undefined for the last one).
  void backward_input(Context& ctx, const Tensor& d_previous, const Tensor& d_output,
                      float balance_loss_grad) const;
  // eh_proj's and the block's weight gradients, and the shared embedding's rows for e_k (the head's weight
  // gradient was accumulated by forward).
  void backward_weight(Context& ctx) const;

  const DecoderLayer& block() const { return block_; }
  // The block's recompute mode (DecoderLayer::set_recompute).
  void set_recompute(RecomputeMode mode) { block_.set_recompute(mode); }

 private:
  VocabParallelEmbedding embedding_;
  const Parameter& embedding_norm_;
  const Parameter& hidden_norm_;
  Linear projection_;
  DecoderLayer block_;
  OutputHead head_;
  float norm_eps_;
};

}  // namespace hai
