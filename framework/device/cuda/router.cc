#include "framework/device/cuda/router.h"

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/router_kernels.h"

namespace hai::cuda {
namespace {

constexpr int64_t kMaxExpertsPerToken = 32;  // one lane of a warp holds one choice

// scores: [T, E], topk_indices: [T, K]
kernels::RouterShape shape_of(const Tensor& scores, const Tensor& topk_indices, const RouterOptions& options) {
  kernels::RouterShape shape{.tokens = scores.size(0),
                             .experts = scores.size(1),
                             .experts_per_token = topk_indices.size(1),
                             .groups = options.groups,
                             .groups_per_token = options.groups_per_token};
  HAI_CHECK(shape.experts_per_token <= kMaxExpertsPerToken, "CUDA router: {} experts per token, at most {}",
            shape.experts_per_token, kMaxExpertsPerToken);
  HAI_CHECK(shape.experts <= kernels::kMaxRouterExperts, "CUDA router: {} experts, at most {}", shape.experts,
            kernels::kMaxRouterExperts);
  return shape;
}

}  // namespace

void router_forward(const Tensor& scores, const Tensor& topk_indices, const Tensor& topk_weights,
                    const Tensor& logits, const Tensor& bias, const RouterOptions& options, Stream stream) {
  kernels::RouterShape shape = shape_of(scores, topk_indices, options);
  cudaStream_t cuda_stream = prepare_launch(scores.device(), stream);
  check_launch(kernels::router_forward(scores.data<float>(), topk_indices.data<int32_t>(), topk_weights.data<float>(),
                                       logits.data<float>(), bias.data<float>(), shape,
                                       options.routed_scaling_factor, cuda_stream),
               "router_forward");
}

void router_backward(const Tensor& d_logits, const Tensor& d_topk_weights, const Tensor& scores,
                     const Tensor& topk_indices, float routed_scaling_factor, Stream stream) {
  kernels::RouterShape shape = shape_of(scores, topk_indices, RouterOptions{});
  cudaStream_t cuda_stream = prepare_launch(scores.device(), stream);
  check_launch(kernels::router_backward(d_logits.data<float>(), d_topk_weights.data<float>(), scores.data<float>(),
                                        topk_indices.data<int32_t>(), shape, routed_scaling_factor, cuda_stream),
               "router_backward");
}

}  // namespace hai::cuda
