#pragma once
// The output head with its loss: logits = RMSNorm(h) @ lm_head^T, then softmax cross-entropy against the targets.
// The main model uses model.norm; MTP module k uses its shared_head.norm; both share lm_head.weight.
// T = tokens, H = hidden size, V = vocabulary.

#include <string>

#include "framework/config/config.h"
#include "framework/params/parameter_store.h"
#include "model/linear.h"

namespace hai {

// A token loss read back on the host.
struct TokenLoss {
  double sum = 0;      // sum of the counted tokens' cross-entropy
  int64_t tokens = 0;  // counted tokens (targets that are not ignored)
  double mean() const { return tokens > 0 ? sum / static_cast<double>(tokens) : 0.0; }
};

class OutputHead {
 public:
  OutputHead(const ModelConfig& model, const ParameterStore& store, const std::string& norm_name);

  struct Context {
    OwnedTensor input;       // [T, H] h
    OwnedTensor normed;      // [T, H] RMSNorm(h): the main head's is the h_0 that MTP reads
    OwnedTensor rstd;        // [T]
    OwnedTensor head_input;  // [T, H] normed in the compute dtype
    OwnedTensor logits;      // [T, V]; holds d_logits after backward_input
    Tensor targets;          // [T] i32, the caller's
  };

  // loss_sum: [1] fp32 on h's device += the sum of the tokens' cross-entropy (an ignored target adds 0);
  // targets: [T] i32, kIgnoreTarget where there is none. Nothing is read on the host.
  void forward(Context& ctx, const Tensor& h, const Tensor& targets, const Tensor& loss_sum) const;
  // d_h: [T, H] (overwritten). loss_grad: the objective's derivative with respect to TokenLoss::sum.
  // d_normed_extra: gradient reaching `normed` from elsewhere (MTP reads the main head's normed output), or an
  // undefined Tensor.
  void backward_input(Context& ctx, const Tensor& d_h, float loss_grad, const Tensor& d_normed_extra = {}) const;
  void backward_weight(Context& ctx) const;

 private:
  const Parameter& norm_;
  Linear head_;
  float norm_eps_;
};

}  // namespace hai
