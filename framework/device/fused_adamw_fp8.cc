#include "framework/device/fused_adamw_fp8.h"

#include <cmath>
#include <utility>

#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/fused_adamw_fp8.h"
#endif

namespace hai {
namespace {

// Where weight.copy.x starts in `values` [V] fp32, checked to lie inside it.
int64_t value_offset(const AdamWFp8Weight& weight, const Tensor& values) {
  const Tensor& x = weight.copy.x;
  auto byte_offset = static_cast<const char*>(x.raw()) - static_cast<const char*>(values.raw());
  int64_t offset = byte_offset / static_cast<int64_t>(sizeof(float));
  HAI_CHECK(x.device() == values.device() && byte_offset >= 0 && byte_offset % sizeof(float) == 0 &&
                offset + x.numel() <= values.numel(),
            "fused adamw fp8: the weight {} does not lie inside the values {}", x.str(), values.str());
  HAI_CHECK(weight.state_offset >= 0, "fused adamw fp8: a negative state offset {}", weight.state_offset);
  return offset;
}

}  // namespace

AdamWFp8Batch::AdamWFp8Batch(const Tensor& values, std::vector<AdamWFp8Weight> weights)
    : values_(values), count_(static_cast<int64_t>(weights.size())) {
  HAI_CHECK(values.rank() == 1, "fused adamw fp8: the values must be flat, got {}", values.str());
  check_dtype(values, DType::f32, "fused adamw fp8 values");
  std::vector<AdamWSegment> segments;
  std::vector<Fp8WeightCopy> copies;
  for (AdamWFp8Weight& weight : weights) {
    segments.push_back({.value_offset = value_offset(weight, values),
                        .state_offset = weight.state_offset,
                        .numel = weight.copy.x.numel(),
                        .weight_decay = weight.weight_decay});
    copies.push_back(std::move(weight.copy));
  }
  segments_ = AdamWSegmentTable(segments, values.device());
  copies_ = Fp8WeightBatch(std::move(copies));
  if (empty() || values.device().is_cpu()) return;
#ifdef HAI_WITH_CUDA
  state_table_ = cuda::fused_adamw_fp8_state_table(segments, values.device());
#else
  throw_no_backend("fused adamw fp8", values.device());
#endif
}

void AdamWFp8Batch::step(const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                         const AdamWSettings& settings, const GradientScale& gradient_scale,
                         [[maybe_unused]] Stream stream) const {
  if (empty()) return;
  check_fused_adamw_operands(values_, Tensor(), grads, exp_avg, exp_avg_sq, segments_, settings, gradient_scale);
  if (values_.device().is_cpu()) {
    fused_adamw_step(values_, Tensor(), grads, exp_avg, exp_avg_sq, segments_, settings, gradient_scale);
    const Tensor& on_device = gradient_scale.on_device;
    if (!std::isnan(on_device.defined() ? on_device.data<float>()[0] : gradient_scale.factor)) copies_.quantize();
    return;
  }
#ifdef HAI_WITH_CUDA
  cuda::fused_adamw_fp8_step(copies_, state_table_, grads, exp_avg, exp_avg_sq, settings, gradient_scale, stream);
#endif
}

}  // namespace hai
