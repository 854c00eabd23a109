#include "framework/device/cuda/expert_load.h"

#include "framework/device/cuda/expert_load_kernels.h"
#include "framework/device/cuda/launch.h"

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
