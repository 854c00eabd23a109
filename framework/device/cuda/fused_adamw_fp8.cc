#include "framework/device/cuda/fused_adamw_fp8.h"

#include "framework/device/cuda/adamw.h"
#include "framework/device/cuda/fused_adamw_fp8_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {

OwnedTensor fused_adamw_fp8_state_table(const std::vector<AdamWSegment>& weights, Device device) {
  std::vector<int64_t> rows;
  for (const AdamWSegment& weight : weights) {
    rows.push_back(weight.state_offset);
    rows.push_back(weight.weight_decay ? 1 : 0);
  }
  auto count = static_cast<int64_t>(weights.size());
  OwnedTensor table(Shape{count, 2}, DType::i64, device);
  copy_tensor(table, Tensor(rows.data(), Shape{count, 2}, DType::i64, Device::cpu()));
  return table;
}

void fused_adamw_fp8_step(const Fp8WeightBatch& copies, const Tensor& states, const Tensor& grads,
                          const Tensor& exp_avg, const Tensor& exp_avg_sq, const AdamWSettings& settings,
                          const GradientScale& gradient_scale, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(grads.device(), stream);
  kernels::FusedAdamWFp8Operands operands{
      .weights = static_cast<const kernels::Fp8WeightEntry*>(copies.device_table().raw()),
      .states = states.data<int64_t>(),
      .count = copies.count(),
      .tiles = copies.tiles(),
      .grads = grads.data<float>(),
      .exp_avg = exp_avg.raw(),
      .exp_avg_sq = exp_avg_sq.raw(),
      .gradient_scale = gradient_scale.on_device.defined() ? gradient_scale.on_device.data<float>() : nullptr};
  check_launch(kernels::fused_adamw_fp8_step(operands, exp_avg.dtype() == DType::bf16, adamw_scalars(settings),
                                             gradient_scale.factor, cuda_stream),
               "fused_adamw_fp8_step");
}

}  // namespace hai::cuda
