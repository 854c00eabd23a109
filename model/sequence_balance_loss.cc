#include "model/sequence_balance_loss.h"

#include "framework/device/balance_loss.h"
#include "framework/device/elementwise.h"
#include "parallel/sequence_parallel.h"

namespace hai {

void sequence_balance_loss_forward(const TensorParallel& tp, const Tensor& loss, const Tensor& expert_fraction,
                                   const Tensor& scores, const Tensor& topk_indices, float alpha) {
  OwnedTensor all_scores, all_indices;  // [T, E], [T, K] under sequence parallelism
  balance_loss_forward(loss, expert_fraction, all_gather_sequence(tp, scores, all_scores),
                       all_gather_sequence(tp, topk_indices, all_indices), alpha);
}

void sequence_balance_loss_backward(const TensorParallel& tp, const Tensor& d_logits, const Tensor& d_loss,
                                    const Tensor& expert_fraction, const Tensor& scores, float alpha) {
  if (!tp.splits_sequence()) return balance_loss_backward(d_logits, d_loss, expert_fraction, scores, alpha);
  OwnedTensor all_scores;  // [T, E]
  Tensor gathered = all_gather_sequence(tp, scores, all_scores);
  OwnedTensor d_all = zero_tensor(gathered.shape(), DType::f32, gathered.device());  // [T, E]
  balance_loss_backward(d_all, d_loss, expert_fraction, gathered, alpha);
  add_scaled(d_logits, local_sequence_rows(tp, d_all));
}

}  // namespace hai
