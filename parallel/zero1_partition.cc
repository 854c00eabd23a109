#include "parallel/zero1_partition.h"

#include "framework/device/elementwise.h"
#include "framework/optim/adamw.h"

namespace hai {

Zero1Partition::Zero1Partition(ParameterStore& store, int64_t layout_begin, int64_t layout_end, Communicator& group,
                               int mean_over, MomentDType moments)
    : store_(store),
      layout_begin_(layout_begin),
      group_(group),
      mean_over_(mean_over),
      shard_(flat_shard(layout_end - layout_begin, group.rank(), group.size())),
      own_segments_(shard_segments(store, layout_begin + shard_.begin, layout_begin + shard_.end)),
      all_segments_(shard_segments(store, layout_begin, layout_end)),
      exp_avg_(zero_tensor(Shape{shard_.numel()}, moment_dtype(moments), store.grads().device())),
      exp_avg_sq_(zero_tensor(Shape{shard_.numel()}, moment_dtype(moments), store.grads().device())) {
  HAI_CHECK(0 <= layout_begin && layout_begin <= layout_end && layout_end <= store.grads().numel(),
            "ZeRO-1 partition [{}, {}) outside the {} gradient elements", layout_begin, layout_end,
            store.grads().numel());
  HAI_CHECK(mean_over >= 1, "ZeRO-1 partition: the mean over {} ranks", mean_over);
  if (!sharded()) return;
  Device device = store.grads().device();
  staging_ = zero_tensor(Shape{shard_.chunk * group.size()}, DType::f32, device);
  reduced_grads_ = zero_tensor(Shape{shard_.chunk}, DType::f32, device);
}

Tensor Zero1Partition::layout_grads() const {
  return store_.grads().slice(layout_begin_, layout_begin_ + shard_.total);
}

Tensor Zero1Partition::shard_grads() const {
  return sharded() ? reduced_grads_.tensor().slice(0, shard_.numel()) : layout_grads();
}

void Zero1Partition::reduce_gradients() {
  if (sharded()) {
    // NOTE: the padding [total, chunk * size) of staging_ stays zero: only gradients and owned values land there.
    copy_tensor(staging_.tensor().slice(0, shard_.total), layout_grads());
    group_.reduce_scatter(reduced_grads_, staging_, ReduceOp::sum);
  }
  if (mean_over_ > 1 && shard_.numel() > 0) scale_tensor(shard_grads(), 1.0f / static_cast<float>(mean_over_));
}

void Zero1Partition::step(AdamWSettings settings, float weight_decay) {
  Tensor grads = shard_grads();  // [shard] fp32
  for (const ShardSegment& segment : own_segments_) {
    settings.weight_decay = segment.weight_decay ? weight_decay : 0.0f;
    int64_t local = segment.grad_offset - owned_begin();
    adamw_step(store_.values().slice(segment.value_offset, segment.value_offset + segment.numel),  // [n] fp32
               grads.slice(local, local + segment.numel),                                         // [n] fp32
               exp_avg().slice(local, local + segment.numel),     // [n] moment dtype
               exp_avg_sq().slice(local, local + segment.numel),  // [n] moment dtype
               settings);
  }
}

void Zero1Partition::gather_values() {
  if (!sharded()) return;
  Tensor staging = staging_.tensor();  // [chunk * size] fp32, the padded range
  Tensor values = store_.values();     // [N] fp32
  auto staged = [&](const ShardSegment& segment) {
    int64_t begin = segment.grad_offset - layout_begin_;
    return staging.slice(begin, begin + segment.numel);
  };
  for (const ShardSegment& segment : own_segments_) {
    copy_tensor(staged(segment), values.slice(segment.value_offset, segment.value_offset + segment.numel));
  }
  int64_t own_chunk = group_.rank() * shard_.chunk;
  group_.all_gather(staging, staging.slice(own_chunk, own_chunk + shard_.chunk));
  for (const ShardSegment& segment : all_segments_) {
    copy_tensor(values.slice(segment.value_offset, segment.value_offset + segment.numel), staged(segment));
  }
}

}  // namespace hai
