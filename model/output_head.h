#pragma once
// The output head with its loss: logits = RMSNorm(h) @ lm_head^T, then softmax cross-entropy against the targets.
// The main model uses model.norm; MTP module k uses its shared_head.norm; both share lm_head.weight.
// T = tokens, H = hidden size, V = vocabulary, C = tokens per chunk (head_chunk_tokens).
//
// The logits never exist whole: the tokens pass through the head C rows at a time, and only one chunk's logits
// [C, V] fp32 are alive at once. The loss is the last op, so when training, forward finishes each chunk's
// backward at once: d_logits = (softmax - onehot) x loss_grad in place of the logits, then the normed input's
// gradient d_logits @ lm_head and lm_head's gradient += d_logits^T @ normed. What forward keeps is [T, H]
// (h, RMSNorm(h) and the latter's gradient); backward_input only takes the gradient through the RMSNorm.
// NOTE: lm_head's weight gradient is therefore accumulated by forward, not by a later W call: the head has none.
// Chunking changes no row's arithmetic: every per-token value is that of the unchunked head, and only the sums
// over tokens (the loss sum, lm_head's gradient) add the chunks' partial sums one after another.
// Tensor parallelism: lm_head is vocabulary-parallel (this tp rank's rows, V below is theirs) and the loss is
// vocab_parallel_cross_entropy's, so no rank holds a token's logits whole; the normed input's gradient is summed
// over the tp ranks (the region's entry) once forward has finished the chunks. Under sequence parallelism h, the
// norm and the context are this rank's rows [T / tp, H] (parallel/sequence_parallel.h): the normed rows are gathered
// for lm_head and the loss, which covers all T tokens on every tp rank, and d_normed is reduce-scattered back.

#include <cstdint>
#include <optional>
#include <string>

#include "framework/config/config.h"
#include "framework/params/parameter_store.h"
#include "model/linear.h"
#include "parallel/tensor_parallel.h"

namespace hai {

// A token loss read back on the host.
struct TokenLoss {
  double sum = 0;      // sum of the counted tokens' cross-entropy
  int64_t tokens = 0;  // counted tokens (targets that are not ignored)
  double mean() const { return tokens > 0 ? sum / static_cast<double>(tokens) : 0.0; }
};

// The auto chunk's bound on one chunk's fp32 logits (model.head_chunk_tokens = 0).
inline constexpr int64_t kHeadChunkLogitBytes = int64_t{256} << 20;

// C: model.head_chunk_tokens, or when that is 0 the most tokens whose fp32 logits fit in kHeadChunkLogitBytes,
// rounded down to a multiple of 128 tokens when more than 128 fit (at least 1).
int64_t head_chunk_tokens(const ModelConfig& model);

// The derivative of grad_scale x weight x (the mean over `counted` tokens) with respect to their loss sum; 0
// when no token is counted.
float token_loss_grad(float grad_scale, double weight, int64_t counted);

class OutputHead {
 public:
  OutputHead(const ModelConfig& model, const ParameterStore& store, const std::string& norm_name,
             TensorParallel tp = {});

  struct Context {
    OwnedTensor normed;    // [T, H] RMSNorm(h): the main head's is the h_0 that MTP reads
    OwnedTensor input;     // [T, H] h (training)
    OwnedTensor rstd;      // [T]
    OwnedTensor d_normed;  // [T, H] the loss's gradient with respect to normed, computed by forward (training)
  };

  // loss_sum: [1] fp32 on h's device += the sum of the tokens' cross-entropy (an ignored target adds 0);
  // targets: [T] i32, kIgnoreTarget where there is none. Nothing is read on the host.
  // loss_grad: when training, the objective's derivative with respect to TokenLoss::sum (token_loss_grad):
  // lm_head's weight gradient is accumulated into the store and d_normed kept for backward_input. std::nullopt:
  // evaluation, only ctx.normed is kept (for the MTP modules).
  void forward(Context& ctx, const Tensor& h, const Tensor& targets, const Tensor& loss_sum,
               std::optional<float> loss_grad) const;
  // d_h: [T, H] (overwritten); the norm weight's gradient accumulates. d_normed_extra: gradient reaching
  // `normed` from elsewhere (MTP reads the main head's normed output), or an undefined Tensor. Releases the
  // context.
  void backward_input(Context& ctx, const Tensor& d_h, const Tensor& d_normed_extra = {}) const;

 private:
  // Views of one chunk's c rows.
  struct Chunk {
    Tensor normed;    // [c, H]
    Tensor targets;   // [c] i32
    Tensor logits;    // [c, V] scratch: the logits
    Tensor d_logits;  // [c, V] training only, in the head's output_grad_dtype: scratch (logits itself in fp32)
    Tensor losses;    // [c] scratch
    Tensor d_normed;  // [c, H] training only
  };
  void forward_chunk(const Chunk& chunk, const Tensor& loss_sum, std::optional<float> loss_grad) const;

  const Parameter& norm_;
  Linear head_;
  float norm_eps_;
  int64_t chunk_tokens_;
  TensorParallel tp_;
  int64_t vocab_first_;  // the global id of this tp rank's first row of lm_head
};

}  // namespace hai
