#include "framework/device/cross_entropy.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"
#include "framework/device/index_check.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/cross_entropy.cu.
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
#endif

namespace hai {
namespace {

// logits: [T, V], targets: [T]
void check_operands(const Tensor& logits, const Tensor& targets, int32_t ignore_index) {
  HAI_CHECK(logits.rank() == 2, "cross-entropy logits must be [T, V], got {}", logits.str());
  check_dtype(logits, DType::f32, "cross-entropy logits");
  check_shape(targets, Shape{logits.size(0)}, "cross-entropy targets");
  check_same_device(targets, logits, "cross-entropy");
  HAI_CHECK(ignore_index < 0 || ignore_index >= logits.size(1),
            "cross-entropy ignore_index {} must not be a class of [0, {})", ignore_index, logits.size(1));
  check_indices_in_range(targets, logits.size(1), "cross-entropy target", ignore_index);
}

void check_losses(const Tensor& losses, const Tensor& logits) {
  check_shape(losses, Shape{logits.size(0)}, "cross-entropy losses");
  check_dtype(losses, DType::f32, "cross-entropy losses");
  check_same_device(losses, logits, "cross-entropy");
}

void check_gradient(const Tensor& d_logits, const Tensor& logits, bool bf16_allowed) {
  check_shape(d_logits, logits.shape(), "cross-entropy d_logits");
  HAI_CHECK(d_logits.dtype() == DType::f32 || (bf16_allowed && d_logits.dtype() == DType::bf16),
            "cross-entropy d_logits must be fp32{}, got {}", bf16_allowed ? " or bf16" : "", d_logits.str());
  check_same_device(d_logits, logits, "cross-entropy");
}

}  // namespace

void cross_entropy_forward(const Tensor& losses, const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                           [[maybe_unused]] Stream stream) {
  check_operands(logits, targets, ignore_index);
  check_losses(losses, logits);
  if (logits.device().is_cpu()) return cpu::cross_entropy_forward(losses, logits, targets, ignore_index);
#ifdef HAI_WITH_CUDA
  return cuda::cross_entropy_forward(losses, logits, targets, ignore_index, stream);
#else
  throw_no_backend("cross_entropy_forward", logits.device());
#endif
}

void cross_entropy_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets, float scale,
                            int32_t ignore_index, [[maybe_unused]] Stream stream) {
  check_operands(logits, targets, ignore_index);
  check_gradient(d_logits, logits, /*bf16_allowed=*/false);
  if (logits.device().is_cpu()) return cpu::cross_entropy_backward(d_logits, logits, targets, scale, ignore_index);
#ifdef HAI_WITH_CUDA
  return cuda::cross_entropy_backward(d_logits, logits, targets, scale, ignore_index, stream);
#else
  throw_no_backend("cross_entropy_backward", logits.device());
#endif
}

void cross_entropy_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                                 const Tensor& targets, float scale, int32_t ignore_index,
                                 [[maybe_unused]] Stream stream) {
  check_operands(logits, targets, ignore_index);
  check_losses(losses, logits);
  check_gradient(d_logits, logits, /*bf16_allowed=*/true);
  if (logits.device().is_cpu()) {
    return cpu::cross_entropy_loss_and_grad(losses, d_logits, logits, targets, scale, ignore_index);
  }
#ifdef HAI_WITH_CUDA
  return cuda::cross_entropy_loss_and_grad(losses, d_logits, logits, targets, scale, ignore_index, stream);
#else
  throw_no_backend("cross_entropy_loss_and_grad", logits.device());
#endif
}

}  // namespace hai
