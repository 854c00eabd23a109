#include "framework/device/cuda/balance_loss.h"

#include "framework/device/cuda/balance_loss_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {
namespace {

// expert_fraction: [N, E], scores: [N * L, E], topk_indices: [N * L, K] (K = 0 where the op has none)
kernels::BalanceShape shape_of(const Tensor& expert_fraction, const Tensor& scores, int64_t experts_per_token) {
  kernels::BalanceShape shape{.sequences = expert_fraction.size(0),
                              .tokens_per_sequence = scores.size(0) / expert_fraction.size(0),
                              .experts = scores.size(1),
                              .experts_per_token = experts_per_token};
  HAI_CHECK(shape.experts <= kernels::kMaxBalanceExperts, "CUDA balance loss: {} experts, at most {}", shape.experts,
            kernels::kMaxBalanceExperts);
  return shape;
}

}  // namespace

void balance_loss_forward(const Tensor& loss, const Tensor& expert_fraction, const Tensor& scores,
                          const Tensor& topk_indices, float alpha, Stream stream) {
  kernels::BalanceShape shape = shape_of(expert_fraction, scores, topk_indices.size(1));
  cudaStream_t cuda_stream = prepare_launch(scores.device(), stream);
  check_launch(kernels::balance_loss_forward(loss.data<float>(), expert_fraction.data<float>(), scores.data<float>(),
                                             topk_indices.data<int32_t>(), shape, alpha, cuda_stream),
               "balance_loss_forward");
}

void balance_loss_backward(const Tensor& d_logits, const Tensor& d_loss, const Tensor& expert_fraction,
                           const Tensor& scores, float alpha, Stream stream) {
  kernels::BalanceShape shape = shape_of(expert_fraction, scores, 0);
  cudaStream_t cuda_stream = prepare_launch(scores.device(), stream);
  check_launch(kernels::balance_loss_backward(d_logits.data<float>(), d_loss.data<float>(),
                                              expert_fraction.data<float>(), scores.data<float>(), shape, alpha,
                                              cuda_stream),
               "balance_loss_backward");
}

}  // namespace hai::cuda
