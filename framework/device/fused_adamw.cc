#include "framework/device/fused_adamw.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/fused_adamw.cu.
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
#endif

namespace hai {
namespace {

// values, compute: [N]; grads, exp_avg, exp_avg_sq: [M]; the table's runs inside both.
void check_operands(const Tensor& values, const Tensor& compute, const Tensor& grads, const Tensor& exp_avg,
                    const Tensor& exp_avg_sq, const AdamWSegmentTable& segments) {
  HAI_CHECK(values.rank() == 1 && grads.rank() == 1, "fused adamw values and gradients must be flat, got {} and {}",
            values.str(), grads.str());
  check_dtype(values, DType::f32, "fused adamw values");
  check_dtype(grads, DType::f32, "fused adamw gradients");
  HAI_CHECK(exp_avg.dtype() == DType::f32 || exp_avg.dtype() == DType::bf16,
            "fused adamw moments must be fp32 or bf16, got {}", exp_avg.str());
  check_dtype(exp_avg_sq, exp_avg.dtype(), "fused adamw exp_avg_sq");
  for (const Tensor* moment : {&exp_avg, &exp_avg_sq}) {
    check_shape(*moment, grads.shape(), "fused adamw moment");
    check_same_device(*moment, values, "fused adamw");
  }
  check_same_device(grads, values, "fused adamw");
  if (compute.defined()) {
    HAI_CHECK(compute.dtype() == DType::bf16 || compute.dtype() == DType::f16,
              "fused adamw compute copy must be bf16 or fp16, got {}", compute.str());
    check_shape(compute, values.shape(), "fused adamw compute copy");
    check_same_device(compute, values, "fused adamw");
  }
  HAI_CHECK(segments.device() == values.device(), "fused adamw: the segment table is on {}, the values on {}",
            to_string(segments.device()), to_string(values.device()));
  HAI_CHECK(segments.value_end() <= values.numel() && segments.state_end() <= grads.numel(),
            "fused adamw: the segments reach {} values and {} gradients, the tensors hold {} and {}",
            segments.value_end(), segments.state_end(), values.numel(), grads.numel());
}

}  // namespace

void fused_adamw_step(const Tensor& values, const Tensor& compute, const Tensor& grads, const Tensor& exp_avg,
                      const Tensor& exp_avg_sq, const AdamWSegmentTable& segments, const AdamWSettings& settings,
                      const GradientScale& gradient_scale, [[maybe_unused]] Stream stream) {
  check_operands(values, compute, grads, exp_avg, exp_avg_sq, segments);
  if (gradient_scale.on_device.defined()) {
    check_dtype(gradient_scale.on_device, DType::f32, "fused adamw gradient scale");
    HAI_CHECK(gradient_scale.on_device.numel() == 1, "fused adamw gradient scale must hold one value, got {}",
              gradient_scale.on_device.str());
    check_same_device(gradient_scale.on_device, values, "fused adamw");
  }
  check_adamw_settings(settings);
  if (segments.run_count() == 0) return;
  if (values.device().is_cpu()) {
    return cpu::fused_adamw_step(values, compute, grads, exp_avg, exp_avg_sq, segments, settings, gradient_scale);
  }
#ifdef HAI_WITH_CUDA
  return cuda::fused_adamw_step(values, compute, grads, exp_avg, exp_avg_sq, segments, settings, gradient_scale,
                                stream);
#else
  throw_no_backend("fused_adamw_step", values.device());
#endif
}

}  // namespace hai
