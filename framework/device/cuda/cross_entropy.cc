#include "framework/device/cuda/cross_entropy.h"

#include "framework/device/cuda/cross_entropy_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {

void cross_entropy_forward(const Tensor& losses, const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                           Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(logits.device(), stream);
  check_launch(kernels::cross_entropy_forward(losses.data<float>(), logits.data<float>(), targets.data<int32_t>(),
                                              ignore_index, logits.size(0), logits.size(1), cuda_stream),
               "cross_entropy_forward");
}

void cross_entropy_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets, float scale,
                            int32_t ignore_index, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(logits.device(), stream);
  check_launch(kernels::cross_entropy_backward(d_logits.data<float>(), logits.data<float>(), targets.data<int32_t>(),
                                               scale, ignore_index, logits.size(0), logits.size(1), cuda_stream),
               "cross_entropy_backward");
}

void cross_entropy_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                                 const Tensor& targets, float scale, int32_t ignore_index, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(logits.device(), stream);
  check_launch(kernels::cross_entropy_loss_and_grad(losses.data<float>(), d_logits.raw(),
                                                    d_logits.dtype() == DType::bf16, logits.data<float>(),
                                                    targets.data<int32_t>(), scale, ignore_index, logits.size(0),
                                                    logits.size(1), cuda_stream),
               "cross_entropy_loss_and_grad");
}

}  // namespace hai::cuda
