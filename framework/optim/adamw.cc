#include "framework/optim/adamw.h"

#include "framework/device/adamw.h"

namespace hai {
DType moment_dtype(MomentDType dtype) {
  return dtype == MomentDType::bf16 ? DType::bf16 : DType::f32;
}

AdamW::AdamW(ParameterStore& store, const OptimizerConfig& config)
    : store_(store),
      config_(config),
      segments_(segments_of(store)),
      exp_avg_(zero_tensor(Shape{store.grads().numel()}, moment_dtype(config.moment_dtype), store.grads().device())),
      exp_avg_sq_(zero_tensor(Shape{store.grads().numel()}, moment_dtype(config.moment_dtype), store.grads().device())) {}

std::vector<AdamW::Segment> AdamW::segments_of(const ParameterStore& store) {
  std::vector<Segment> segments;
  for (const Parameter& parameter : store.parameters()) {
    if (!parameter.spec.trainable) continue;
    int64_t numel = parameter.spec.shape.numel();
    if (!segments.empty()) {
      Segment& last = segments.back();
      bool contiguous = last.value_offset + last.numel == parameter.offset &&
                        last.grad_offset + last.numel == parameter.grad_offset;
      if (contiguous && last.weight_decay == parameter.spec.weight_decay) {
        last.numel += numel;
        continue;
      }
    }
    segments.push_back({parameter.offset, parameter.grad_offset, numel, parameter.spec.weight_decay});
  }
  return segments;
}

AdamWSettings adamw_settings(const OptimizerConfig& config, float lr, int64_t step_number) {
  AdamWSettings settings;
  settings.lr = lr;
  settings.beta1 = static_cast<float>(config.betas[0]);
  settings.beta2 = static_cast<float>(config.betas[1]);
  settings.eps = static_cast<float>(config.eps);
  settings.weight_decay = static_cast<float>(config.weight_decay);
  settings.step = step_number;
  return settings;
}

void AdamW::step(float lr, int64_t step_number) {
  AdamWSettings settings = adamw_settings(config_, lr, step_number);
  store_.zero_unwritten_grads();
  for (const Segment& segment : segments_) {
    settings.weight_decay = segment.weight_decay ? static_cast<float>(config_.weight_decay) : 0.0f;
    int64_t value_end = segment.value_offset + segment.numel;
    int64_t grad_end = segment.grad_offset + segment.numel;
    adamw_step(store_.values(segment.value_offset, value_end),           // [n] fp32
               store_.grads().slice(segment.grad_offset, grad_end),     // [n] fp32
               exp_avg().slice(segment.grad_offset, grad_end),          // [n] moment dtype
               exp_avg_sq().slice(segment.grad_offset, grad_end),       // [n] moment dtype
               settings);
  }
  store_.refresh_compute_copy();
}

}  // namespace hai
