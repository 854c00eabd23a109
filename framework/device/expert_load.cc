#include "framework/device/expert_load.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/expert_load.cu.
namespace hai::cuda {

void accumulate_expert_load(const Tensor& load, const Tensor& topk_indices, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(load.device(), stream);
  check_launch(kernels::accumulate_expert_load(load.data<int32_t>(), topk_indices.data<int32_t>(),
                                               topk_indices.numel(), load.size(0), cuda_stream),
               "accumulate_expert_load");
}

void update_router_bias(const Tensor& bias, const Tensor& load, float gamma, const Tensor& update_scale,
                        Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(bias.device(), stream);
  const float* skip_on_nan = update_scale.defined() ? update_scale.data<float>() : nullptr;
  check_launch(kernels::update_router_bias(bias.data<float>(), load.data<int32_t>(), gamma, skip_on_nan, bias.size(0),
                                           cuda_stream),
               "update_router_bias");
}

}  // namespace hai::cuda
#endif

namespace hai {

void accumulate_expert_load(const Tensor& load, const Tensor& topk_indices, [[maybe_unused]] Stream stream) {
  HAI_CHECK(load.rank() == 1, "expert load must be [E], got {}", load.str());
  HAI_CHECK(topk_indices.rank() == 2, "expert load topk_indices must be [T, K], got {}", topk_indices.str());
  check_dtype(load, DType::i32, "expert load");
  check_dtype(topk_indices, DType::i32, "expert load topk_indices");
  check_same_device(load, topk_indices, "accumulate_expert_load");
  if (load.device().is_cpu()) return cpu::accumulate_expert_load(load, topk_indices);
#ifdef HAI_WITH_CUDA
  return cuda::accumulate_expert_load(load, topk_indices, stream);
#else
  throw_no_backend("accumulate_expert_load", load.device());
#endif
}

void update_router_bias(const Tensor& bias, const Tensor& load, float gamma, const Tensor& update_scale,
                        [[maybe_unused]] Stream stream) {
  HAI_CHECK(bias.rank() == 1, "router bias must be [E], got {}", bias.str());
  check_shape(load, bias.shape(), "expert load");
  check_dtype(bias, DType::f32, "router bias");
  check_dtype(load, DType::i32, "expert load");
  check_same_device(bias, load, "update_router_bias");
  if (update_scale.defined()) {
    check_dtype(update_scale, DType::f32, "router bias update scale");
    HAI_CHECK(update_scale.numel() == 1, "router bias update scale must hold one value, got {}", update_scale.str());
    check_same_device(update_scale, bias, "update_router_bias");
  }
  if (bias.device().is_cpu()) return cpu::update_router_bias(bias, load, gamma, update_scale);
#ifdef HAI_WITH_CUDA
  return cuda::update_router_bias(bias, load, gamma, update_scale, stream);
#else
  throw_no_backend("update_router_bias", bias.device());
#endif
}

}  // namespace hai
