#include "parallel/zero1.h"

#include <algorithm>
#include <cmath>

#include "framework/core/error.h"
#include "framework/device/grad_norm.h"
#include "framework/optim/grad_clip.h"
#include "parallel/rank_values.h"

namespace hai {
namespace {

// The end of the dense gradients: the first expert gradient offset (all of the layout when there is none).
// Throws unless every dense gradient comes before every expert gradient.
int64_t dense_gradient_end(const ParameterStore& store) {
  int64_t dense_end = 0, expert_begin = store.grads().numel();
  for (const Parameter& parameter : store.parameters()) {
    if (!parameter.spec.trainable) continue;
    int64_t end = parameter.grad_offset + parameter.spec.shape.numel();
    if (parameter.spec.group == ParameterGroup::dense) dense_end = std::max(dense_end, end);
    if (parameter.spec.group == ParameterGroup::expert) expert_begin = std::min(expert_begin, parameter.grad_offset);
  }
  HAI_CHECK(dense_end <= expert_begin,
            "ZeRO-1 needs the dense gradients before the expert gradients (build the store from "
            "dense_before_expert(specs))");
  return dense_end;
}

// The values of the non-trainable parameters, in store order, adjacent ones merged.
std::vector<ValueRange> untrained_value_ranges(const ParameterStore& store) {
  std::vector<ValueRange> ranges;
  for (const Parameter& parameter : store.parameters()) {
    if (parameter.spec.trainable) continue;
    int64_t end = parameter.offset + parameter.spec.shape.numel();
    if (!ranges.empty() && ranges.back().end == parameter.offset) {
      ranges.back().end = end;
    } else {
      ranges.push_back({parameter.offset, end});
    }
  }
  return ranges;
}

}  // namespace

std::vector<ParameterSpec> dense_before_expert(std::vector<ParameterSpec> specs) {
  std::stable_partition(specs.begin(), specs.end(),
                        [](const ParameterSpec& spec) { return spec.group == ParameterGroup::dense; });
  return specs;
}

Zero1Optimizer::Zero1Optimizer(ParameterStore& store, const OptimizerConfig& config, Communicator& dp,
                               Communicator& expert_dp)
    : store_(store), config_(config), dp_(dp), untrained_values_(untrained_value_ranges(store)) {
  int64_t dense_end = dense_gradient_end(store), total = store.grads().numel();
  partitions_.reserve(2);
  if (dense_end > 0) partitions_.emplace_back(store, 0, dense_end, dp, dp.size(), config.moment_dtype);
  if (total > dense_end) partitions_.emplace_back(store, dense_end, total, expert_dp, dp.size(), config.moment_dtype);
  norm_scratch_ = OwnedTensor(Shape{grad_norm_scratch_size(shard_grads())}, DType::i64, store.grads().device());
}

std::vector<Tensor> Zero1Optimizer::shard_grads() const {
  std::vector<Tensor> grads;
  for (const Zero1Partition& partition : partitions_) {
    if (partition.shard().numel() > 0) grads.push_back(partition.shard_grads());
  }
  return grads;
}

double Zero1Optimizer::reduce_gradients() {
  gradient_scale_ = 1.0f;
  for (Zero1Partition& partition : partitions_) partition.reduce_gradients();
  double own = grad_norm_squared(shard_grads(), norm_scratch_);
  return dp_.size() > 1 ? sum_over_ranks(dp_, own) : own;
}

double Zero1Optimizer::clip(double squared_norm, double max_norm, double loss_scale) {
  HAI_CHECK(loss_scale > 0.0, "ZeRO-1: the loss scale must be positive, got {}", loss_scale);
  double norm = std::sqrt(squared_norm) / loss_scale;
  gradient_scale_ = static_cast<float>(clip_factor(norm, max_norm) / loss_scale);
  return norm;
}

void Zero1Optimizer::step(float lr, int64_t step_number) {
  AdamWSettings settings;
  settings.lr = lr;
  settings.beta1 = static_cast<float>(config_.betas[0]);
  settings.beta2 = static_cast<float>(config_.betas[1]);
  settings.eps = static_cast<float>(config_.eps);
  settings.weight_decay = static_cast<float>(config_.weight_decay);
  settings.step = step_number;
  for (Zero1Partition& partition : partitions_) {
    mark_phase(profiler_, "optimizer.adamw");
    partition.step(settings, gradient_scale_);
    mark_phase(profiler_, "optimizer.parameter_all_gather");
    partition.gather_values();
  }
  mark_phase(profiler_, "optimizer.compute_copy_refresh");
  for (Zero1Partition& partition : partitions_) partition.refresh_compute_copy();
  for (const ValueRange& range : untrained_values_) store_.refresh_compute_copy(range.begin, range.end);
  store_.refresh_fp8_copies();
}

int64_t Zero1Optimizer::owned_elements() const {
  int64_t owned = 0;
  for (const Zero1Partition& partition : partitions_) owned += partition.shard().numel();
  return owned;
}

size_t Zero1Optimizer::state_bytes() const {
  size_t bytes = 0;
  for (const Zero1Partition& partition : partitions_) bytes += partition.state_bytes();
  return bytes;
}

}  // namespace hai
