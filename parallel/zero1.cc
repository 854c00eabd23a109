#include "parallel/zero1.h"

#include <algorithm>
#include <bit>
#include <optional>

#include "framework/core/error.h"
#include "framework/device/grad_norm.h"
#include "framework/optim/adamw.h"
#include "framework/device/elementwise.h"

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
            "zero1_store_order(specs))");
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

// [begin, end) of the gradient layout cut where the bucket of consecutive trainable parameters changes, or whether
// they keep their fp32 master in shards (ParameterStore).
void append_bucket_ranges(const ParameterStore& store, int64_t begin, int64_t end, const GradientBucketOf& bucket_of,
                          std::vector<BucketRange>& ranges) {
  if (begin == end) return;
  std::vector<const Parameter*> trainable;  // the parameters of [begin, end), in gradient order
  for (const Parameter& parameter : store.parameters()) {
    if (parameter.spec.trainable && parameter.grad_offset >= begin && parameter.grad_offset < end) {
      trainable.push_back(&parameter);
    }
  }
  std::ranges::sort(trainable, {}, &Parameter::grad_offset);
  BucketRange current{begin, end, trainable.empty() ? kGradientsFinalAtEnd : bucket_of(trainable.front()->spec)};
  bool sharded_master = !trainable.empty() && trainable.front()->sharded_master;
  for (const Parameter* parameter : trainable) {
    int bucket = bucket_of(parameter->spec);
    bool same = bucket == current.bucket && parameter->sharded_master == sharded_master;
    if (same || parameter->grad_offset == current.begin) continue;
    ranges.push_back({current.begin, parameter->grad_offset, current.bucket});
    current = {parameter->grad_offset, end, bucket};
    sharded_master = parameter->sharded_master;
  }
  ranges.push_back(current);
}

// Whether the partition of `range` may all-gather its compute copy (Zero1Options::reads_fp32_value).
bool gathers_compute_copy(const ParameterStore& store, const BucketRange& range, const Zero1Options& options) {
  if (options.whole_values_every_step || !options.reads_fp32_value) return false;
  for (const Parameter& parameter : store.parameters()) {
    bool inside = parameter.spec.trainable && parameter.grad_offset >= range.begin && parameter.grad_offset < range.end;
    if (inside && (options.reads_fp32_value(parameter.spec) || parameter.fp8.defined())) return false;
  }
  return true;
}

}  // namespace

std::function<bool(const ParameterSpec&)> zero1_sharded_master(
    DType compute_dtype, int dp, int expert_dp, const std::function<bool(const ParameterSpec&)>& reads_fp32_value) {
  if (compute_dtype == DType::f32 || !reads_fp32_value) {
    return [](const ParameterSpec&) { return false; };
  }
  return [=](const ParameterSpec& spec) {
    int replicas = spec.group == ParameterGroup::expert ? expert_dp : dp;
    return spec.trainable && replicas > 1 && !reads_fp32_value(spec);
  };
}

std::vector<BucketRange> gradient_bucket_ranges(const ParameterStore& store, const GradientBucketOf& bucket_of) {
  int64_t dense_end = dense_gradient_end(store);
  std::vector<BucketRange> ranges;
  append_bucket_ranges(store, 0, dense_end, bucket_of, ranges);
  append_bucket_ranges(store, dense_end, store.grads().numel(), bucket_of, ranges);
  return ranges;
}

std::vector<ParameterSpec> zero1_store_order(std::vector<ParameterSpec> specs,
                                             const std::function<bool(const ParameterSpec&)>& reads_fp32_value) {
  auto dense = [](const ParameterSpec& spec) { return spec.trainable && spec.group == ParameterGroup::dense; };
  std::stable_partition(specs.begin(), specs.end(), [](const ParameterSpec& spec) { return spec.trainable; });
  auto experts = std::stable_partition(specs.begin(), specs.end(), dense);
  if (reads_fp32_value) std::stable_partition(specs.begin(), experts, reads_fp32_value);
  return specs;
}

Zero1Optimizer::Zero1Optimizer(ParameterStore& store, const OptimizerConfig& config, Communicator& dp,
                               Communicator& expert_dp, const Zero1Options& options)
    : store_(store),
      config_(config),
      dp_(dp),
      pipeline_(options.pipeline != nullptr && options.pipeline->size() > 1 ? options.pipeline : nullptr),
      dp_side_(dp.size() > 1 ? dp.side_stream_duplicate() : nullptr),
      expert_dp_side_(&expert_dp != &dp && expert_dp.size() > 1 ? expert_dp.side_stream_duplicate() : nullptr),
      gather_under_forward_(options.gather_under_forward),
      untrained_values_(untrained_value_ranges(store)) {
  int64_t dense_end = dense_gradient_end(store);
  Communicator& dense_group = dp_side_ ? *dp_side_ : dp;
  Communicator& expert_group = expert_dp_side_ ? *expert_dp_side_ : &expert_dp == &dp ? dense_group : expert_dp;
  GradientBucketOf one_bucket = [](const ParameterSpec&) { return kGradientsFinalAtEnd; };
  std::vector<BucketRange> ranges = gradient_bucket_ranges(store, options.bucket_of ? options.bucket_of : one_bucket);
  partitions_.reserve(ranges.size());
  for (const BucketRange& range : ranges) {
    Communicator& group = range.begin < dense_end ? dense_group : expert_group;
    partitions_.emplace_back(store, range.begin, range.end, group, config.moment_dtype,
                             gathers_compute_copy(store, range, options));
    partition_buckets_.push_back(range.bucket);
  }
  reducing_.assign(partitions_.size(), false);
  Device device = store.grads().device();
  if (options.update_under_forward) {
    update_stream_ = std::make_unique<SideStream>(device);
    for (size_t i = 0; i < partitions_.size(); ++i) update_marks_.push_back(std::make_unique<StreamMark>(device));
  }
  split_fp8_copies();
  norm_grads_ = norm_grads(options.counts_in_norm);
  norm_scratch_ = OwnedTensor(Shape{grad_norm_scratch_size(norm_grads_)}, DType::i64, device);
  own_squared_norm_ = zero_tensor(Shape{1}, DType::i64, device);
  int pipeline_ranks = pipeline_ ? pipeline_->size() : 1;
  if (pipeline_) pipeline_squared_norms_ = zero_tensor(Shape{pipeline_ranks}, DType::i64, device);
  if (dp.size() > 1) rank_squared_norms_ = zero_tensor(Shape{dp.size() * pipeline_ranks}, DType::i64, device);
  grad_norm_ = zero_tensor(Shape{1}, DType::i64, device);
  update_scale_ = OwnedTensor(Shape{1}, DType::f32, device);
  fill_tensor(update_scale_, 1.0f / static_cast<float>(dp.size()));  // a step() before any reduce_gradients()
}

Zero1Optimizer::~Zero1Optimizer() = default;

void Zero1Optimizer::gradients_final(int bucket) {
  for (size_t i = 0; i < partitions_.size(); ++i) {
    if (partition_buckets_[i] != bucket) continue;
    HAI_CHECK(!reducing_[i], "ZeRO-1: the gradients of bucket {} were announced final twice in one step", bucket);
    partitions_[i].start_reduction();
    reducing_[i] = true;
  }
}

std::vector<Tensor> Zero1Optimizer::shard_grads() const {
  std::vector<Tensor> grads;
  for (const Zero1Partition& partition : partitions_) {
    if (partition.shard().numel() > 0) grads.push_back(partition.shard_grads());
  }
  return grads;
}

std::vector<Tensor> Zero1Optimizer::norm_grads(const std::function<bool(const ParameterSpec&)>& counts_in_norm) const {
  if (!counts_in_norm) return shard_grads();
  std::vector<Tensor> grads;
  for (const Zero1Partition& partition : partitions_) {
    if (partition.shard().numel() == 0) continue;
    // The shard's gradient elements [owned_begin, owned_end) less those of parameters another rank counts.
    std::vector<std::pair<int64_t, int64_t>> skipped;
    for (const Parameter& parameter : store_.parameters()) {
      if (!parameter.spec.trainable || counts_in_norm(parameter.spec)) continue;
      int64_t first = std::max(partition.owned_begin(), parameter.grad_offset);
      int64_t last = std::min(partition.owned_end(), parameter.grad_offset + parameter.spec.shape.numel());
      if (first < last) skipped.emplace_back(first, last);
    }
    std::ranges::sort(skipped);
    Tensor shard = partition.shard_grads();  // [owned_end - owned_begin]
    int64_t next = partition.owned_begin();
    auto keep = [&](int64_t end) {
      if (next < end) grads.push_back(shard.slice(next - partition.owned_begin(), end - partition.owned_begin()));
    };
    for (auto [first, last] : skipped) {
      keep(first);
      next = std::max(next, last);
    }
    keep(partition.owned_end());
  }
  return grads;
}

void Zero1Optimizer::reduce_gradients(const GradientClipSettings& clip) {
  join_step();
  for (size_t i = 0; i < partitions_.size(); ++i) {
    if (!reducing_[i]) partitions_[i].start_reduction();
  }
  for (Zero1Partition& partition : partitions_) partition.finish_reduction();
  reducing_.assign(partitions_.size(), false);
  // NOTE: the shards hold sums over the dp ranks; gradient_update_scale takes the norm of their mean.
  grad_norm_squared_to(own_squared_norm_, norm_grads_, norm_scratch_);
  if (pipeline_) pipeline_->all_gather(pipeline_squared_norms_, own_squared_norm_);
  Tensor stage_norms = pipeline_ ? pipeline_squared_norms_.tensor() : own_squared_norm_.tensor();  // [pp]
  if (dp_.size() > 1) dp_.all_gather(rank_squared_norms_, stage_norms);
  Tensor squared_norms = dp_.size() > 1 ? rank_squared_norms_.tensor() : stage_norms;  // [dp x pp]
  gradient_update_scale(update_scale_, grad_norm_, squared_norms, dp_.size(), clip);
}

double Zero1Optimizer::grad_norm() const {
  return std::bit_cast<double>(host_copy(grad_norm_).tensor().data<int64_t>()[0]);
}

void Zero1Optimizer::step(float lr, int64_t step_number) {
  AdamWSettings settings = adamw_settings(config_, lr, step_number);
  join_step();
  for (const ValueRange& range : untrained_values_) store_.refresh_compute_copy(range.begin, range.end);
  // NOTE: each partition's all-gather runs on its group's stream while the next partition steps (disjoint values);
  // the compute stream waits for them before the compute copies are refreshed, except for those left running.
  if (update_stream_) update_stream_->wait_for_compute();  // the reduced gradients and the update scale
  for (size_t i : update_order()) {
    Zero1Partition& partition = partitions_[i];
    mark_phase(profiler_, "optimizer.adamw");
    bool beside = updates_under_forward(i);
    partition.step(settings, GradientScale(update_scale_.tensor()), beside ? update_stream_->stream() : Stream{});
    if (beside) {
      update_fp8_copies_[i].quantize(update_stream_->stream());
      update_stream_->mark(*update_marks_[i]);
    }
    mark_phase(profiler_, "optimizer.parameter_all_gather");
    if (!gathers_under_forward(partition)) partition.start_gather_values();
  }
  for (Zero1Partition& partition : partitions_) partition.finish_gather_values();
  mark_phase(profiler_, "optimizer.compute_copy_refresh");
  for (Zero1Partition& partition : partitions_) partition.refresh_compute_copy();
  compute_stream_fp8_copies_.quantize();
  // NOTE: last, so that the waits above do not wait for them (a side stream runs its work in queued order).
  for (Zero1Partition& partition : partitions_) {
    if (gathers_under_forward(partition)) partition.start_gather_values();
  }
}

bool Zero1Optimizer::gathers_under_forward(const Zero1Partition& partition) const {
  return gather_under_forward_ && partition.gathers_in_place() && partition.gathers_compute_copy();
}

void Zero1Optimizer::split_fp8_copies() {
  auto beside_partition = [&](const Parameter& parameter) -> std::optional<size_t> {
    for (size_t i = 0; i < partitions_.size(); ++i) {
      const Zero1Partition& partition = partitions_[i];
      bool inside = parameter.spec.trainable && parameter.grad_offset >= partition.layout_begin() &&
                    parameter.grad_offset < partition.layout_end();
      if (inside) return updates_under_forward(i) ? std::optional<size_t>(i) : std::nullopt;
    }
    return std::nullopt;
  };
  for (size_t i = 0; i < partitions_.size(); ++i) {
    update_fp8_copies_.push_back(
        store_.fp8_weight_batch([&](const Parameter& parameter) { return beside_partition(parameter) == i; }));
  }
  compute_stream_fp8_copies_ =
      store_.fp8_weight_batch([&](const Parameter& parameter) { return !beside_partition(parameter).has_value(); });
}

bool Zero1Optimizer::updates_under_forward(size_t partition) const {
  return update_stream_ && partition_buckets_[partition] != kGradientsFinalAtEnd &&
         partitions_[partition].step_completes_update();
}

std::vector<size_t> Zero1Optimizer::update_order() const {
  auto need_position = [&](size_t partition) {
    auto found = std::ranges::find(need_order_, partition_buckets_[partition]);
    return static_cast<size_t>(found - need_order_.begin());  // need_order_.size() when never needed
  };
  std::vector<size_t> order(partitions_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::ranges::stable_sort(order, {}, need_position);
  return order;
}

void Zero1Optimizer::parameters_needed(int bucket) {
  if (std::ranges::find(need_order_, bucket) == need_order_.end()) need_order_.push_back(bucket);
  for (size_t i = 0; i < partitions_.size(); ++i) {
    if (partition_buckets_[i] != bucket) continue;
    if (!update_marks_.empty()) update_marks_[i]->join_compute();
    partitions_[i].finish_gather_values();
  }
}

void Zero1Optimizer::join_step() {
  for (const std::unique_ptr<StreamMark>& mark : update_marks_) mark->join_compute();
  for (Zero1Partition& partition : partitions_) partition.finish_gather_values();
}

void Zero1Optimizer::gather_master_values() {
  join_step();  // NOTE: the gathers stage through the gradients, which pending updates still read
  for (Zero1Partition& partition : partitions_) partition.gather_master_values();
}

void Zero1Optimizer::take_master_values() {
  join_step();
  for (Zero1Partition& partition : partitions_) partition.take_master_values();
}

std::vector<Tensor> Zero1Optimizer::master_values() const {
  std::vector<Tensor> values = {store_.values()};
  for (const Zero1Partition& partition : partitions_) {
    if (partition.shards_master()) values.push_back(partition.master());
  }
  return values;
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
