#include "framework/device/cuda/fused_adamw.h"

#include "framework/device/cuda/adamw.h"
#include "framework/device/cuda/fused_adamw_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {
namespace {

kernels::ComputeCopy compute_copy_of(const Tensor& compute) {
  if (!compute.defined()) return kernels::ComputeCopy::none;
  return compute.dtype() == DType::bf16 ? kernels::ComputeCopy::bf16 : kernels::ComputeCopy::f16;
}

}  // namespace

void fused_adamw_step(const Tensor& values, const Tensor& compute, const Tensor& grads, const Tensor& exp_avg,
                      const Tensor& exp_avg_sq, const AdamWSegmentTable& segments, const AdamWSettings& settings,
                      const GradientScale& gradient_scale, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(values.device(), stream);
  kernels::FusedAdamWOperands operands{.values = values.data<float>(),
                                       .compute = compute.defined() ? compute.raw() : nullptr,
                                       .grads = grads.data<float>(),
                                       .exp_avg = exp_avg.raw(),
                                       .exp_avg_sq = exp_avg_sq.raw(),
                                       .runs = segments.runs().data<int64_t>(),
                                       .run_count = segments.run_count(),
                                       .gradient_scale = gradient_scale.on_device.defined()
                                                             ? gradient_scale.on_device.data<float>()
                                                             : nullptr};
  check_launch(kernels::fused_adamw_step(operands, compute_copy_of(compute), exp_avg.dtype() == DType::bf16,
                                         adamw_scalars(settings), gradient_scale.factor, cuda_stream),
               "fused_adamw_step");
}

}  // namespace hai::cuda
