#include "parallel/zero1.h"

#include "framework/device/adamw.h"
#include "framework/device/elementwise.h"
#include "framework/device/grad_norm.h"
#include "framework/optim/adamw.h"
#include "framework/optim/grad_clip.h"
#include "parallel/rank_values.h"

namespace hai {

Zero1Optimizer::Zero1Optimizer(ParameterStore& store, const OptimizerConfig& config, Communicator& dp)
    : store_(store),
      config_(config),
      dp_(dp),
      shard_(flat_shard(store.grads().numel(), dp.rank(), dp.size())),
      own_segments_(shard_segments(store, shard_.begin, shard_.end)),
      all_segments_(shard_segments(store, 0, shard_.total)),
      exp_avg_(zero_tensor(Shape{shard_.numel()}, moment_dtype(config.moment_dtype), store.grads().device())),
      exp_avg_sq_(zero_tensor(Shape{shard_.numel()}, moment_dtype(config.moment_dtype), store.grads().device())) {
  if (!sharded()) return;
  Device device = store.grads().device();
  staging_ = zero_tensor(Shape{shard_.chunk * dp.size()}, DType::f32, device);
  reduced_grads_ = zero_tensor(Shape{shard_.chunk}, DType::f32, device);
}

Tensor Zero1Optimizer::shard_grads() const {
  return sharded() ? reduced_grads_.tensor().slice(0, shard_.numel()) : store_.grads();
}

double Zero1Optimizer::reduce_gradients() {
  if (sharded()) {
    // NOTE: the padding [total, chunk * dp) of staging_ stays zero: only gradients and owned values land there.
    copy_tensor(staging_.tensor().slice(0, shard_.total), store_.grads());
    dp_.reduce_scatter(reduced_grads_, staging_, ReduceOp::sum);
    scale_tensor(reduced_grads_, 1.0f / static_cast<float>(dp_.size()));
  }
  double own = shard_.numel() > 0 ? grad_norm_squared({shard_grads()}) : 0.0;
  return sharded() ? sum_over_ranks(dp_, own) : own;
}

double Zero1Optimizer::clip(double squared_norm, double max_norm) {
  std::vector<Tensor> grads;
  if (shard_.numel() > 0) grads.push_back(shard_grads());
  return clip_gradients(grads, squared_norm, max_norm);
}

void Zero1Optimizer::step(float lr, int64_t step_number) {
  AdamWSettings settings;
  settings.lr = lr;
  settings.beta1 = static_cast<float>(config_.betas[0]);
  settings.beta2 = static_cast<float>(config_.betas[1]);
  settings.eps = static_cast<float>(config_.eps);
  settings.step = step_number;
  Tensor grads = shard_grads();  // [shard] fp32
  for (const ShardSegment& segment : own_segments_) {
    settings.weight_decay = segment.weight_decay ? static_cast<float>(config_.weight_decay) : 0.0f;
    int64_t local = segment.grad_offset - shard_.begin;
    adamw_step(store_.values().slice(segment.value_offset, segment.value_offset + segment.numel),  // [n] fp32
               grads.slice(local, local + segment.numel),                                         // [n] fp32
               exp_avg().slice(local, local + segment.numel),     // [n] moment dtype
               exp_avg_sq().slice(local, local + segment.numel),  // [n] moment dtype
               settings);
  }
  if (sharded()) gather_values();
  store_.refresh_compute_copy();
}

void Zero1Optimizer::gather_values() {
  Tensor staging = staging_.tensor();  // [chunk * dp] fp32, the padded gradient layout
  Tensor values = store_.values();     // [N] fp32
  for (const ShardSegment& segment : own_segments_) {
    copy_tensor(staging.slice(segment.grad_offset, segment.grad_offset + segment.numel),
                values.slice(segment.value_offset, segment.value_offset + segment.numel));
  }
  int64_t own_chunk = dp_.rank() * shard_.chunk;
  dp_.all_gather(staging, staging.slice(own_chunk, own_chunk + shard_.chunk));
  for (const ShardSegment& segment : all_segments_) {
    copy_tensor(values.slice(segment.value_offset, segment.value_offset + segment.numel),
                staging.slice(segment.grad_offset, segment.grad_offset + segment.numel));
  }
}

}  // namespace hai
