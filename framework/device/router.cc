#include "framework/device/router.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/router.cu.
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
#endif

namespace hai {
namespace {

// Checks scores: [T, E] fp32, topk_indices: [T, K] i32, topk_weights: [T, K] fp32, all on one device.
void check_routing_operands(const Tensor& scores, const Tensor& topk_indices, const Tensor& topk_weights) {
  HAI_CHECK(scores.rank() == 2, "router scores must be [T, E], got {}", scores.str());
  HAI_CHECK(topk_indices.rank() == 2 && topk_indices.size(0) == scores.size(0),
            "router topk_indices must be [T, K] with T = {}, got {}", scores.size(0), topk_indices.str());
  check_shape(topk_weights, topk_indices.shape(), "router topk_weights");
  check_dtype(scores, DType::f32, "router scores");
  check_dtype(topk_indices, DType::i32, "router topk_indices");
  check_dtype(topk_weights, DType::f32, "router topk_weights");
  check_same_device(topk_indices, scores, "router");
  check_same_device(topk_weights, scores, "router");
}

void check_options(const RouterOptions& options, int64_t experts, int64_t experts_per_token) {
  HAI_CHECK(options.groups >= 1 && experts % options.groups == 0, "router: {} experts do not split into {} groups",
            experts, options.groups);
  HAI_CHECK(options.groups_per_token >= 1 && options.groups_per_token <= options.groups,
            "router: groups_per_token {} must be in [1, groups = {}]", options.groups_per_token, options.groups);
  int64_t reachable = options.groups_per_token * (experts / options.groups);
  HAI_CHECK(experts_per_token >= 1 && experts_per_token <= reachable,
            "router: {} experts per token, but {} groups of {} experts offer only {}", experts_per_token,
            options.groups_per_token, experts / options.groups, reachable);
}

}  // namespace

void router_forward(const Tensor& scores, const Tensor& topk_indices, const Tensor& topk_weights,
                    const Tensor& logits, const Tensor& bias, const RouterOptions& options,
                    [[maybe_unused]] Stream stream) {
  check_routing_operands(scores, topk_indices, topk_weights);
  check_shape(logits, scores.shape(), "router logits");
  check_shape(bias, Shape{scores.size(1)}, "router bias");
  check_dtype(logits, DType::f32, "router logits");
  check_dtype(bias, DType::f32, "router bias");
  check_same_device(logits, scores, "router");
  check_same_device(bias, scores, "router");
  check_options(options, scores.size(1), topk_indices.size(1));
  if (scores.device().is_cpu()) return cpu::router_forward(scores, topk_indices, topk_weights, logits, bias, options);
#ifdef HAI_WITH_CUDA
  return cuda::router_forward(scores, topk_indices, topk_weights, logits, bias, options, stream);
#else
  throw_no_backend("router_forward", scores.device());
#endif
}

void router_backward(const Tensor& d_logits, const Tensor& d_topk_weights, const Tensor& scores,
                     const Tensor& topk_indices, float routed_scaling_factor, [[maybe_unused]] Stream stream) {
  check_routing_operands(scores, topk_indices, d_topk_weights);
  check_shape(d_logits, scores.shape(), "router d_logits");
  check_dtype(d_logits, DType::f32, "router d_logits");
  check_same_device(d_logits, scores, "router_backward");
  if (scores.device().is_cpu()) {
    return cpu::router_backward(d_logits, d_topk_weights, scores, topk_indices, routed_scaling_factor);
  }
#ifdef HAI_WITH_CUDA
  return cuda::router_backward(d_logits, d_topk_weights, scores, topk_indices, routed_scaling_factor, stream);
#else
  throw_no_backend("router_backward", scores.device());
#endif
}

}  // namespace hai
