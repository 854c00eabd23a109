#pragma once
// Zero1Partition: one part of ZeRO-1 (zero1.h): a range [layout_begin, layout_end) of the flat gradient layout
// (ParameterStore::grads()) whose gradients reduce over one group, sharded over that group (flat_shard.h, with
// offsets relative to the range). The dense parameters form one partition over the DP group, the expert
// parameters another over the expert-DP group. Each rank keeps the AdamW moments of its shard only, and where the
// store keeps the range's fp32 masters in shards (parameter_store.h: sharded masters, the range's parameters all or
// none) the fp32 master of its shard too, master(): the step updates it, and the gather spreads the updated compute
// copy, or the updated fp32 values staged in the range's gradients (which the step has consumed) from which the
// compute and FP8 copies are then refreshed.
//   start_reduction():  the range's gradients that nothing wrote this step are zero-filled
//                       (ParameterStore::zero_unwritten_grads), then the range, padded to a multiple of the group
//                       size, is reduce-scattered (sum). A range that needs no padding is reduced in place in the
//                       store's gradient buffer (no copy, no buffer the size of the range: at 1.7B parameters and
//                       dp 2 that is 10 GB less);
//   finish_reduction(): waits for it (the group may be a side-stream communicator, communicator.h): the shard holds
//                       the sum of the DP ranks' gradients;
//   step():             AdamW on the owned elements (a chunk boundary may split a parameter), one fused launch over
//                       all of them (fused_adamw.h) with the gradients multiplied by a given scale as they are read
//                       (zero1.h makes it divide by the ranks: the mean gradient, without a pass over the shard);
//   start_gather_values(): the owned updated values are all-gathered into every rank's value buffer, on the
//                       group's stream: the compute stream goes on (the next partition's step) until
//   finish_gather_values(): waits for it (and copies the gathered values out of the staging, if staged);
//   refresh_compute_copy(): the store's compute copy of the range's values.
// On a group of one rank there are no copies: the shard is the range of the store's gradient buffer, and step()
// writes the compute copy of the values it updates, so refresh_compute_copy() has nothing left to do. On larger
// groups the step updates only the owned values: the whole range's compute copy is rounded after the all-gather.
// With gather_compute_copy (a 16-bit compute copy, a sharded range): the step writes the compute copy of the owned
// values and gather_values() all-gathers that copy instead (half the bytes, and no rounding pass afterwards); the
// fp32 values of the elements other ranks own are then stale until gather_master_values() all-gathers them
// (between steps: it stages through the range's gradients). Every rank ends with bitwise the same compute copy
// either way (the owner's rounding of the same value).
// A range that needs no padding and whose values lie contiguous in the value buffer in gradient order (no
// non-trainable parameter among them: the experts' ranges) all-gathers in place there, with no staging copies; its
// finish_gather_values() waits for its own gather alone (a CUDA event on the group's stream), not for the gathers
// queued there after it. So such a gather may be left running beside later compute-stream work: the next forward
// pass finishes each layer's gather before the layer reads its weights (zero1.h, gather_under_forward).

#include <cstdint>
#include <memory>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/config/config.h"
#include "framework/device/adamw.h"
#include "framework/device/adamw_segments.h"
#include "framework/device/fused_adamw.h"
#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"
#include "parallel/flat_shard.h"

namespace hai {

class Zero1Partition {
 public:
  // The store and the group must outlive the partition; every rank of the group has the same layout of the
  // range. Moments start at zero.
  Zero1Partition(ParameterStore& store, int64_t layout_begin, int64_t layout_end, Communicator& group,
                 MomentDType moments, bool gather_compute_copy = false);

  void start_reduction();
  void finish_reduction();
  Tensor shard_grads() const;  // [shard().numel()] fp32, the sum over the ranks after finish_reduction()
  // AdamW on the owned elements with the gradients times gradient_scale (NaN: no update); settings.weight_decay
  // applies to the elements of parameters that ask for weight decay. Queued on `stream`.
  void step(const AdamWSettings& settings, const GradientScale& gradient_scale, Stream stream = {});
  // Whether step() is all of this partition's update: unsharded (nothing to gather) and its compute copy written
  // by the fused step itself (no refresh afterwards). Such a step may run on a side stream by itself.
  bool step_completes_update() const;
  void start_gather_values();
  void finish_gather_values();  // a no-op when no gather is pending
  // Stages every rank's fp32 values of the range whole in the store (after a step's compute-copy gather, and
  // always for a sharded master: the next backward overwrites the staged values). Between steps.
  void gather_master_values();
  // A sharded master's shard <- the range's whole fp32 values staged in the store (after a caller wrote them: a
  // checkpoint's). A no-op otherwise.
  void take_master_values();
  bool shards_master() const { return master_sharded_; }
  // [shard().numel()] fp32: this rank's shard of the fp32 master, element i of gradient element owned_begin() + i;
  // undefined unless shards_master().
  Tensor master() const { return master_.tensor(); }
  bool gathers_compute_copy() const { return gather_compute_copy_; }
  bool gathers_in_place() const { return gathers_in_place_; }
  void refresh_compute_copy();

  int64_t layout_begin() const { return layout_begin_; }
  int64_t layout_end() const { return layout_end_; }
  const FlatShard& shard() const { return shard_; }  // relative to layout_begin()
  int64_t owned_begin() const { return layout_begin_ + shard_.begin; }  // into the flat gradient layout
  int64_t owned_end() const { return layout_begin_ + shard_.end; }
  // [shard().numel()] moment dtype: element i belongs to gradient element owned_begin() + i. Writable (resume).
  Tensor exp_avg() const { return exp_avg_.tensor(); }
  Tensor exp_avg_sq() const { return exp_avg_sq_.tensor(); }
  // The moments' bytes, and the master shard's.
  size_t state_bytes() const {
    return exp_avg().bytes() + exp_avg_sq().bytes() + (master_sharded_ ? master().bytes() : 0);
  }

 private:
  bool sharded() const { return group_.size() > 1; }
  // Whether the range is not a multiple of the group's size. Only then does a sharded partition keep buffers of
  // its own (staging_, reduced_grads_); otherwise it reduce-scatters the store's gradients in place (this rank's
  // shard is its chunk of them) and all-gathers the updated values through them too, the step having read them.
  bool padded() const;
  Tensor layout_grads() const;  // [shard().total] fp32: the range of the store's gradients
  Tensor padded_range() const;  // [chunk * group] fp32: staging_ when padded, else layout_grads()
  // Whether the range's values are contiguous in gradient order (the constructor's rule above).
  bool values_follow_gradients() const;
  Tensor range_values() const;        // [value_end_ - value_begin_] fp32: the store's values of the range
  void stage_master();                // copies master_ to its place among them (a sharded master's)
  Tensor range_compute_copy() const;  // the same in the compute dtype; undefined when they have no compute copy
  // Queues the all-gather of the owned elements of `source` (range_values() or range_compute_copy()) into every
  // rank's; finish_gather_values() makes the compute stream wait for it and unstages.
  void start_gather(const Tensor& source);
  Tensor gather_staging(const Tensor& source) const;  // [chunk * size] source dtype, over padded_range()
  Tensor in_range(const Tensor& range, const ShardSegment& segment) const;  // the segment's place in a range's
  Tensor staged(const Tensor& staging, const ShardSegment& segment) const;  // the segment's place in the staging

  ParameterStore& store_;
  int64_t layout_begin_;
  int64_t layout_end_;
  Communicator& group_;
  FlatShard shard_;
  std::vector<ShardSegment> own_segments_;  // the owned elements (absolute gradient offsets)
  std::vector<ShardSegment> all_segments_;  // every element of the range
  AdamWSegmentTable own_table_;             // own_segments_ on the device, relative to value_begin_ and the shard
  int64_t value_begin_ = 0;                 // the values of the range's parameters: [value_begin_, value_end_)
  int64_t value_end_ = 0;
  OwnedTensor staging_;                     // [chunk * group] fp32, the padded range; only when sharded and padded
  OwnedTensor reduced_grads_;               // [chunk] fp32, this rank's chunk of the mean; the same
  OwnedTensor exp_avg_;
  OwnedTensor exp_avg_sq_;
  bool master_sharded_ = false;  // the store keeps the range's fp32 masters in shards: master_ holds this rank's
  OwnedTensor master_;           // [shard().numel()] fp32
  bool gather_compute_copy_ = false;
  bool gathers_in_place_ = false;    // sharded, unpadded, values_follow_gradients()
  bool master_values_whole_ = true;  // false while other ranks' fp32 values are stale (gather_compute_copy_)
  Tensor gathering_;                 // the source of the gather started and not yet finished, or none
  std::unique_ptr<SideStreamMark> gathered_;  // in place: where that gather ends on the group's stream
};

}  // namespace hai
