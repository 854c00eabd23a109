#include "parallel/zero1_partition.h"

#include <algorithm>

#include "framework/device/fused_adamw.h"
#include "framework/optim/adamw.h"

namespace hai {
namespace {

// The segments as the fused step's table: value offsets relative to value_begin (the step reads the range's values
// and compute copy), state offsets relative to the shard's first element.
AdamWSegmentTable segment_table(const std::vector<ShardSegment>& segments, int64_t value_begin, int64_t owned_begin,
                                Device device) {
  std::vector<AdamWSegment> table;
  for (const ShardSegment& segment : segments) {
    table.push_back({segment.value_offset - value_begin, segment.grad_offset - owned_begin, segment.numel,
                     segment.weight_decay});
  }
  return AdamWSegmentTable(table, device);
}

}  // namespace

Zero1Partition::Zero1Partition(ParameterStore& store, int64_t layout_begin, int64_t layout_end, Communicator& group,
                               MomentDType moments, bool gather_compute_copy)
    : store_(store),
      layout_begin_(layout_begin),
      layout_end_(layout_end),
      group_(group),
      shard_(flat_shard(layout_end - layout_begin, group.rank(), group.size())),
      own_segments_(shard_segments(store, layout_begin + shard_.begin, layout_begin + shard_.end)),
      all_segments_(shard_segments(store, layout_begin, layout_end)),
      exp_avg_(zero_tensor(Shape{shard_.numel()}, moment_dtype(moments), store.grads().device())),
      exp_avg_sq_(zero_tensor(Shape{shard_.numel()}, moment_dtype(moments), store.grads().device())) {
  HAI_CHECK(0 <= layout_begin && layout_begin <= layout_end && layout_end <= store.grads().numel(),
            "ZeRO-1 partition [{}, {}) outside the {} gradient elements", layout_begin, layout_end,
            store.grads().numel());
  if (!all_segments_.empty()) value_begin_ = all_segments_.front().value_offset;
  for (const ShardSegment& segment : all_segments_) {
    value_begin_ = std::min(value_begin_, segment.value_offset);
    value_end_ = std::max(value_end_, segment.value_offset + segment.numel);
  }
  int sharded_masters = 0, whole_masters = 0;
  for (const Parameter& parameter : store.parameters()) {
    bool inside = parameter.spec.trainable && layout_begin <= parameter.grad_offset && parameter.grad_offset < layout_end;
    if (!inside) continue;
    ++(parameter.sharded_master ? sharded_masters : whole_masters);
  }
  HAI_CHECK(sharded_masters == 0 || whole_masters == 0,
            "ZeRO-1 partition [{}, {}): {} of its parameters keep their fp32 master in shards, {} whole", layout_begin,
            layout_end, sharded_masters, whole_masters);
  master_sharded_ = sharded_masters > 0;
  HAI_CHECK(!master_sharded_ || (sharded() && values_follow_gradients() && value_begin_ == layout_begin),
            "ZeRO-1 partition [{}, {}): a sharded fp32 master needs a group of several ranks and values in gradient "
            "order", layout_begin, layout_end);
  // NOTE: a sharded master's segments index master_ as they index the moments (value offsets are gradient offsets).
  int64_t table_values_begin = master_sharded_ ? owned_begin() : value_begin_;
  own_table_ = segment_table(own_segments_, table_values_begin, owned_begin(), store.grads().device());
  if (master_sharded_) {
    master_ = OwnedTensor(Shape{shard_.numel()}, DType::f32, store.grads().device());
    take_master_values();  // ParameterStore::initialize() staged them
  }
  gather_compute_copy_ = gather_compute_copy && sharded() && range_compute_copy().raw() != nullptr;
  gathers_in_place_ = sharded() && !padded() && values_follow_gradients();
  if (!sharded() || !padded()) return;
  Device device = store.grads().device();
  staging_ = zero_tensor(Shape{shard_.chunk * group.size()}, DType::f32, device);
  reduced_grads_ = zero_tensor(Shape{shard_.chunk}, DType::f32, device);
}

bool Zero1Partition::values_follow_gradients() const {
  for (const ShardSegment& segment : all_segments_) {
    if (segment.value_offset - value_begin_ != segment.grad_offset - layout_begin_) return false;
  }
  return value_end_ - value_begin_ == shard_.total;
}

bool Zero1Partition::padded() const { return shard_.chunk * group_.size() != shard_.total; }

Tensor Zero1Partition::padded_range() const {
  return padded() ? staging_.tensor() : layout_grads();  // [chunk * group] fp32
}

Tensor Zero1Partition::layout_grads() const {
  return store_.grads().slice(layout_begin_, layout_begin_ + shard_.total);
}

Tensor Zero1Partition::shard_grads() const {
  if (!sharded()) return layout_grads();
  if (padded()) return reduced_grads_.tensor().slice(0, shard_.numel());
  return layout_grads().slice(shard_.begin, shard_.end);  // reduced in place
}

void Zero1Partition::start_reduction() {
  store_.zero_unwritten_grads(layout_begin_, layout_begin_ + shard_.total);
  if (sharded() && padded()) {
    // NOTE: the padding [total, chunk * size) of staging_ stays zero: only gradients and owned values land there.
    copy_tensor(staging_.tensor().slice(0, shard_.total), layout_grads());
    group_.reduce_scatter(reduced_grads_, staging_, ReduceOp::sum);
  } else if (sharded()) {
    group_.reduce_scatter(shard_grads(), layout_grads(), ReduceOp::sum);
  }
}

void Zero1Partition::finish_reduction() { group_.join_side_stream(); }

Tensor Zero1Partition::range_values() const { return store_.values(value_begin_, value_end_); }

Tensor Zero1Partition::range_compute_copy() const { return store_.compute_values(value_begin_, value_end_); }

bool Zero1Partition::step_completes_update() const {
  return !sharded() && store_.compute_copy_in_one_piece(value_begin_, value_end_);
}

void Zero1Partition::step(const AdamWSettings& settings, const GradientScale& gradient_scale, Stream stream) {
  // NOTE: unsharded, the step updates every value of the range and writes their compute copy as it goes; sharded
  // and gathering the compute copy, it writes that of the owned values, which the gather then spreads.
  // A range whose compute copy has holes (fp8_only weights among others, unsharded) is refreshed after the step.
  if (master_sharded_) {
    Tensor compute = gather_compute_copy_ ? store_.compute_values(owned_begin(), owned_end()) : Tensor();  // [shard]
    fused_adamw_step(master_, compute, shard_grads(), exp_avg(), exp_avg_sq(), own_table_, settings, gradient_scale,
                     stream);
    return;
  }
  bool writes_compute = !sharded() || gather_compute_copy_;
  bool in_one_piece = store_.compute_copy_in_one_piece(value_begin_, value_end_);
  Tensor compute = writes_compute && in_one_piece ? range_compute_copy() : Tensor();  // [range] compute dtype, or none
  fused_adamw_step(range_values(), compute, shard_grads(), exp_avg(), exp_avg_sq(), own_table_, settings,
                   gradient_scale, stream);
  if (writes_compute && !in_one_piece) store_.refresh_compute_copy(value_begin_, value_end_);  // compute stream
}

void Zero1Partition::start_gather_values() {
  if (!sharded()) return;
  if (gather_compute_copy_) {
    start_gather(range_compute_copy());
    master_values_whole_ = false;
  } else {
    stage_master();
    start_gather(range_values());
  }
}

void Zero1Partition::gather_master_values() {
  finish_gather_values();
  if (master_values_whole_ && !master_sharded_) return;
  stage_master();
  start_gather(range_values());
  finish_gather_values();
  master_values_whole_ = true;
}

// NOTE: the range's gradients are free here: the step has read this rank's shard of them.
void Zero1Partition::stage_master() {
  if (master_sharded_ && shard_.numel() > 0) copy_tensor(range_values().slice(shard_.begin, shard_.end), master_);
}

void Zero1Partition::take_master_values() {
  if (master_sharded_ && shard_.numel() > 0) copy_tensor(master_, range_values().slice(shard_.begin, shard_.end));
}

// NOTE: unpadded and not in place, the store's gradients of the range carry the values: the step has consumed them.
// A 16-bit source uses the first half of their bytes.
Tensor Zero1Partition::gather_staging(const Tensor& source) const {
  Tensor range = padded_range();                                 // [chunk * size] fp32
  return Tensor(range.raw(), range.shape(), source.dtype(), range.device());  // [chunk * size]
}

void Zero1Partition::start_gather(const Tensor& source) {
  HAI_CHECK(!gathering_.raw(), "ZeRO-1 partition: a gather started before the last one finished");
  gathering_ = source;
  int64_t own_chunk = group_.rank() * shard_.chunk;
  if (gathers_in_place_) {
    group_.all_gather(source, source.slice(own_chunk, own_chunk + shard_.chunk));  // [chunk * size]
    group_.mark_side_stream(gathered_);
    return;
  }
  Tensor staging = gather_staging(source);
  for (const ShardSegment& segment : own_segments_) copy_tensor(staged(staging, segment), in_range(source, segment));
  group_.all_gather(staging, staging.slice(own_chunk, own_chunk + shard_.chunk));
}

void Zero1Partition::finish_gather_values() {
  if (!gathering_.raw()) return;
  if (gathers_in_place_) {
    group_.join_side_stream_mark(gathered_.get());
  } else {
    group_.join_side_stream();
    Tensor staging = gather_staging(gathering_);
    for (const ShardSegment& segment : all_segments_) {
      copy_tensor(in_range(gathering_, segment), staged(staging, segment));
    }
  }
  gathering_ = Tensor();
}

Tensor Zero1Partition::in_range(const Tensor& range, const ShardSegment& segment) const {
  int64_t begin = segment.value_offset - value_begin_;
  return range.slice(begin, begin + segment.numel);
}

Tensor Zero1Partition::staged(const Tensor& staging, const ShardSegment& segment) const {
  int64_t begin = segment.grad_offset - layout_begin_;
  return staging.slice(begin, begin + segment.numel);
}

void Zero1Partition::refresh_compute_copy() {
  if (sharded() && !gather_compute_copy_) store_.refresh_compute_copy(value_begin_, value_end_);
}

}  // namespace hai
