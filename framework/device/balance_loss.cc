#include "framework/device/balance_loss.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/balance_loss.cu.
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
#endif

namespace hai {
namespace {

// Checks expert_fraction: [N, E] and scores: [T, E] fp32 with T a multiple of N, on one device.
void check_sequences(const Tensor& expert_fraction, const Tensor& scores) {
  HAI_CHECK(scores.rank() == 2, "balance loss scores must be [T, E], got {}", scores.str());
  HAI_CHECK(expert_fraction.rank() == 2 && expert_fraction.size(1) == scores.size(1),
            "balance loss expert_fraction must be [N, E = {}], got {}", scores.size(1), expert_fraction.str());
  int64_t sequences = expert_fraction.size(0);
  HAI_CHECK(sequences >= 1 && scores.size(0) % sequences == 0, "balance loss: {} tokens do not split into {} sequences",
            scores.size(0), sequences);
  check_dtype(scores, DType::f32, "balance loss scores");
  check_dtype(expert_fraction, DType::f32, "balance loss expert_fraction");
  check_same_device(expert_fraction, scores, "balance loss");
}

}  // namespace

void balance_loss_forward(const Tensor& loss, const Tensor& expert_fraction, const Tensor& scores,
                          const Tensor& topk_indices, float alpha, [[maybe_unused]] Stream stream) {
  check_sequences(expert_fraction, scores);
  check_shape(loss, Shape{expert_fraction.size(0)}, "balance loss");
  HAI_CHECK(topk_indices.rank() == 2 && topk_indices.size(0) == scores.size(0),
            "balance loss topk_indices must be [T = {}, K], got {}", scores.size(0), topk_indices.str());
  check_dtype(loss, DType::f32, "balance loss");
  check_dtype(topk_indices, DType::i32, "balance loss topk_indices");
  check_same_device(loss, scores, "balance loss");
  check_same_device(topk_indices, scores, "balance loss");
  if (scores.device().is_cpu()) return cpu::balance_loss_forward(loss, expert_fraction, scores, topk_indices, alpha);
#ifdef HAI_WITH_CUDA
  return cuda::balance_loss_forward(loss, expert_fraction, scores, topk_indices, alpha, stream);
#else
  throw_no_backend("balance_loss_forward", scores.device());
#endif
}

void balance_loss_backward(const Tensor& d_logits, const Tensor& d_loss, const Tensor& expert_fraction,
                           const Tensor& scores, float alpha, [[maybe_unused]] Stream stream) {
  check_sequences(expert_fraction, scores);
  check_shape(d_loss, Shape{expert_fraction.size(0)}, "balance loss d_loss");
  check_shape(d_logits, scores.shape(), "balance loss d_logits");
  check_dtype(d_loss, DType::f32, "balance loss d_loss");
  check_dtype(d_logits, DType::f32, "balance loss d_logits");
  check_same_device(d_loss, scores, "balance loss");
  check_same_device(d_logits, scores, "balance loss");
  if (scores.device().is_cpu()) return cpu::balance_loss_backward(d_logits, d_loss, expert_fraction, scores, alpha);
#ifdef HAI_WITH_CUDA
  return cuda::balance_loss_backward(d_logits, d_loss, expert_fraction, scores, alpha, stream);
#else
  throw_no_backend("balance_loss_backward", scores.device());
#endif
}

}  // namespace hai
