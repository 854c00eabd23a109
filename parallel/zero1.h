#pragma once
// Zero1Optimizer: AdamW with its state sharded over the data-parallel groups (ZeRO stage 1). The store lays out
// the gradients of the dense parameters before those of the expert parameters (zero1_store_order); each range
// is cut into partitions (zero1_partition.h) by gradient bucket (below): dense ones over the DP group, expert ones
// over the expert-DP group (the ranks holding the same experts), all averaged over the dp ranks of the global
// batch. The partitions communicate on side-stream duplicates of the groups (Communicator::side_stream_duplicate),
// so that a reduction started during the backward runs beside it on the GPU. One step:
//   0. gradients_final(bucket), optional, during the last micro-batch's backward: the partitions of that bucket
//      start their reduce-scatter now (the model announces each bucket once nothing more adds to it).
//   1. reduce_gradients(clip): the partitions not started yet start theirs, in layout order; then each rank waits
//      for all of them and holds its chunk of every partition's summed gradient. Every rank must start the
//      partitions in the same order (the collectives pair up in order), which the model's fixed backward order
//      gives. Then, on the device, with nothing read back to the host (framework/device/grad_clip.h): the squared
//      norms of this rank's shards are all-gathered over the model-parallel group (Zero1Options::pipeline: the
//      pipeline x tensor-parallel ranks), then over the DP group, and summed in (dp, pp) rank order in double (every
//      element, dense or expert, is owned by exactly one rank of the DP group; a pipeline replica, or a box
//      replicated over tp, is counted by one rank: Zero1Options::counts_in_norm), so the norm,
//      and the factor step() multiplies the gradients by as it reads them, are the same on every rank. The factor
//      clips the norm of the unscaled mean gradient to clip.max_norm, removes the loss scale and divides the sums
//      by the ranks; the shards stay as they are. The norm is also the finite check: an inf or NaN gradient on any
//      rank of the group reaches some rank's shard through the sums, so the norm is non-finite on every rank
//      exactly when some rank's gradient was, and the factor is then NaN: step() changes nothing.
//   2. step(): first the compute copy of the non-trainable values (the routing biases, which the trainer moves
//      before the step) is rounded, so that the whole copy ends as a full refresh would make it; then AdamW on the
//      owned elements, one fused launch per partition (framework/device/fused_adamw.h), with the weight decay of
//      the parameter each belongs to; each partition's all-gather of its updated values into every rank of its
//      group starts as soon as its launch is queued and runs beside the next partition's (on the group's side
//      stream); when all have finished, the compute copies are rounded (unsharded partitions wrote theirs in the
//      fused step); last the FP8 weight copies are quantised. With gather_under_forward (Zero1Options, parallel.overlap_param_gather),
//      the partitions that all-gather their compute copy in place (zero1_partition.h: the experts') start their
//      gathers last instead and leave them running:
//      With update_under_forward (Zero1Options), the partitions that need no gather and no refresh (unsharded, the
//      compute copy written by the fused step) step on a low-priority side stream instead, in the order the
//      previous forward asked for their buckets, and quantise their FP8 copies there; they are left running: the
//      next forward's first layers start while the later layers' parameters are still being updated.
//   3. parameters_needed(bucket), during the next forward pass, before the model reads the bucket's weights:
//      the compute stream waits for that bucket's update and gathers left running (a later step(),
//      reduce_gradients(), join_step() or gather_master_values() waits for any left).
// Optimizer memory falls as 1/dp for dense parameters and 1/expert-dp for experts: the moments, and the fp32 master
// of the parameters the store keeps in shards (zero1_sharded_master; ParameterStore's sharded masters): each rank
// holds its shard's master in its partition, the step updates it, and the all-gather spreads the updated compute
// copy (bf16) or the updated fp32 values staged in the (consumed) gradients, from which the compute and FP8 copies
// are refreshed; gather_master_values() stages the whole fp32 values there between steps (a checkpoint).
// The other fp32 values stay whole on every rank (the ParameterStore, which holds only this rank's share:
// model/rank_share.h): in fp32 (they are the compute copy), those the model reads in fp32, and all of them with
// whole_values_every_step; in partitions that all-gather their compute copy those other ranks own are stale until
// gather_master_values(). Every element is reduced and updated by one rank and then copied, so all ranks holding a
// parameter end bitwise equal, and bitwise as with whole masters. On groups of one rank this is the plain optimizer
// (framework/optim/adamw.h) with no copies.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/config/config.h"
#include "framework/device/grad_clip.h"
#include "framework/device/side_stream.h"
#include "framework/metrics/step_profiler.h"
#include "framework/params/parameter_store.h"
#include "parallel/zero1_partition.h"

namespace hai {

// The specs in the order ZeRO-1 needs: every trainable dense parameter (those the model reads in fp32 first, when
// reads_fp32_value is given), then every expert parameter, then the non-trainable ones, each in given order.
// NOTE: with the non-trainable values (the routing biases) last, each bucket's values lie contiguous in gradient
// order, so its partition all-gathers in place (zero1_partition.h); with the fp32-read ones (norms, the MoE gate,
// the embedding) apart, the rest of each dense bucket forms a partition that gathers its 16-bit compute copy.
std::vector<ParameterSpec> zero1_store_order(std::vector<ParameterSpec> specs,
                                             const std::function<bool(const ParameterSpec&)>& reads_fp32_value = {});

// The parameters whose fp32 master ZeRO-1 keeps in shards (the ParameterStore's sharded_master predicate): in
// mixed precision (compute_dtype not fp32), every trainable parameter that the model does not read in fp32
// (reads_fp32_value; null: it reads every one) and that several ranks replicate: dp ranks for a dense one,
// expert_dp for a routed expert. A store built with it must be used with a Zero1Optimizer over those groups. (With
// whole_values_every_step, the EMA's, each step stages the whole fp32 values: ParameterStore::read_values.)
std::function<bool(const ParameterSpec&)> zero1_sharded_master(
    DType compute_dtype, int dp, int expert_dp, const std::function<bool(const ParameterSpec&)>& reads_fp32_value);

// The gradient bucket of a parameter: the parameters whose gradients the backward finishes together, announced by
// Zero1Optimizer::gradients_final(bucket); kGradientsFinalAtEnd: final only when the backward is over.
using GradientBucketOf = std::function<int(const ParameterSpec&)>;
constexpr int kGradientsFinalAtEnd = -1;

struct Zero1Options {
  GradientBucketOf bucket_of = nullptr;  // null: every parameter in kGradientsFinalAtEnd (one dense, one expert partition)
  // Whether the model reads a parameter's fp32 value (not only its compute copy) between steps; null: every one.
  // A sharded partition none of whose parameters is read so, and without FP8 copies, all-gathers its 16-bit
  // compute copy instead of its fp32 values (zero1_partition.h): the other ranks' fp32 values of it go stale
  // until gather_master_values().
  std::function<bool(const ParameterSpec&)> reads_fp32_value = nullptr;
  // All-gather fp32 values every step (an EMA of the values reads them; sharded masters: staged until the next
  // backward).
  bool whole_values_every_step = false;
  // Leave the in-place compute-copy gathers running after step(), for parameters_needed() to join (the caller's
  // model then calls it before it reads each bucket's weights: DeepseekV3Model::set_parameters_needed).
  bool gather_under_forward = false;
  // Run the AdamW steps of the partitions that step() completes alone (Zero1Partition::step_completes_update) on a
  // side stream, left running after step(), for parameters_needed() to join; their FP8 weight copies are quantised
  // there after the update. The caller's model must tell every bucket before its forward reads the bucket's
  // weights, and its backward write no gradient of a bucket before that bucket's forward.
  bool update_under_forward = false;
  // The pipeline group (null or one rank: none): the other stages' ranks, whose parameters the gradient norm and
  // the finite check also cover; every rank of it calls reduce_gradients() alike. counts_in_norm (null: all)
  // tells which parameters this rank counts in the norm: a parameter held by several pipeline ranks (a replica)
  // is counted by one of them (model/rank_share.h).
  Communicator* pipeline = nullptr;
  std::function<bool(const ParameterSpec&)> counts_in_norm = nullptr;
};

// A run of the gradient layout whose trainable parameters share a bucket.
struct BucketRange {
  int64_t begin = 0;
  int64_t end = 0;
  int bucket = kGradientsFinalAtEnd;
};
// The partitions' ranges: the dense range, then the expert range, each cut where the bucket of consecutive
// trainable parameters (in gradient order) changes, or whether their fp32 master is sharded (ParameterStore).
// Together they cover the layout.
std::vector<BucketRange> gradient_bucket_ranges(const ParameterStore& store, const GradientBucketOf& bucket_of);

// Values [begin, end) of the store's value buffer.
struct ValueRange {
  int64_t begin = 0;
  int64_t end = 0;
};

class Zero1Optimizer {
 public:
  // The store and the groups must outlive the optimizer; the ranks of each group hold the same parameter list.
  // dp: the DP group (its size is the number of ranks the gradients are averaged over); expert_dp: the ranks
  // holding this rank's experts. Moments start at zero.
  Zero1Optimizer(ParameterStore& store, const OptimizerConfig& config, Communicator& dp, Communicator& expert_dp,
                 const Zero1Options& options = {});
  // ep = 1: the DP group reduces the experts too.
  Zero1Optimizer(ParameterStore& store, const OptimizerConfig& config, Communicator& dp)
      : Zero1Optimizer(store, config, dp, dp) {}
  ~Zero1Optimizer();
  Zero1Optimizer(const Zero1Optimizer&) = delete;
  Zero1Optimizer& operator=(const Zero1Optimizer&) = delete;

  // Starts the reduction of the gradients of `bucket` (step 0 above); at most once per step and bucket.
  void gradients_final(int bucket);
  // Reduces the store's gradients into this rank's shards and sets the global norm and update scale on the device
  // (step 1 above); clip.loss_scale is the factor the loss was multiplied by. Queues work, waits for nothing.
  void reduce_gradients(const GradientClipSettings& clip = {});
  // The last reduce_gradients()'s norm of the unscaled mean gradient (not finite when some gradient was not),
  // read back to the host: waits for the device.
  double grad_norm() const;
  // [1] fp32 on the gradients' device: what step() multiplies the summed gradients by; NaN when the last
  // reduce_gradients() found a non-finite gradient (the update is skipped; the routing biases read it too).
  Tensor update_scale() const { return update_scale_.tensor(); }
  // One AdamW update of the shards with learning rate `lr` (step_number counts from 1), then the all-gathers and
  // the refresh of the compute and FP8 copies. Changes no value when update_scale() is NaN.
  void step(float lr, int64_t step_number);
  // Makes the compute stream wait for the update and gathers of `bucket` that step() left running (step 3 above).
  void parameters_needed(int bucket);
  // Makes every rank's fp32 values whole again where step() gathered only the compute copy (Zero1Options);
  // call between steps before reading values of parameters this rank does not own (a checkpoint, the end of a
  // run). Collective over the groups.
  void gather_master_values();
  // Makes the compute stream wait for every update and gather step() left running: for a forward that does not
  // tell its buckets one by one (the pipeline schedules), or before reading the values or moments otherwise.
  void join_step();
  // Marks step()'s parts (AdamW, the all-gathers, the compute copy's refresh) in `profiler`; null turns it off.
  void set_profiler(StepProfiler* profiler) { profiler_ = profiler; }

  // The dense partitions, then the expert partitions, in layout order (gradient_bucket_ranges).
  const std::vector<Zero1Partition>& partitions() const { return partitions_; }
  // After the caller wrote every parameter's whole fp32 value into the store (a checkpoint: the sharded masters'
  // where they are staged), each partition takes its shard of the sharded masters. Between steps.
  void take_master_values();
  // This rank's fp32 master values: those the store holds, then each partition's shard of a sharded master.
  std::vector<Tensor> master_values() const;
  int64_t owned_elements() const;  // this rank's shard elements over the partitions
  size_t state_bytes() const;      // the moments and the sharded masters' shards

 private:
  std::vector<Tensor> shard_grads() const;  // the non-empty shards' gradients
  // The parts of the shards' gradients this rank counts in the norm (Zero1Options::counts_in_norm).
  std::vector<Tensor> norm_grads(const std::function<bool(const ParameterSpec&)>& counts_in_norm) const;
  bool gathers_under_forward(const Zero1Partition& partition) const;
  bool updates_under_forward(size_t partition) const;
  void split_fp8_copies();  // sets update_fp8_copies_ and compute_stream_fp8_copies_
  std::vector<size_t> update_order() const;  // partition indices: needed buckets in need order, then the rest

  ParameterStore& store_;
  OptimizerConfig config_;
  Communicator& dp_;
  Communicator* pipeline_ = nullptr;  // Zero1Options::pipeline when it has more than one rank
  std::vector<Tensor> norm_grads_;    // what the norm sums (norm_grads)
  std::unique_ptr<Communicator> dp_side_;         // side-stream duplicates of the groups of more than one rank
  std::unique_ptr<Communicator> expert_dp_side_;  // (none when expert_dp is dp)
  std::vector<Zero1Partition> partitions_;
  std::vector<int> partition_buckets_;  // the bucket of each partition
  std::vector<bool> reducing_;          // whether each partition's reduction started this step
  bool gather_under_forward_ = false;   // Zero1Options::gather_under_forward
  std::unique_ptr<SideStream> update_stream_;           // with Zero1Options::update_under_forward
  std::vector<std::unique_ptr<StreamMark>> update_marks_;  // per partition: where its update ends there
  std::vector<Fp8WeightBatch> update_fp8_copies_;  // per partition: the FP8 copies quantised after its update there
  Fp8WeightBatch compute_stream_fp8_copies_;       // the others' (all of them without an update stream)
  std::vector<int> need_order_;  // the buckets in the order parameters_needed() first saw them
  std::vector<ValueRange> untrained_values_;  // the non-trainable parameters' values, contiguous runs merged
  OwnedTensor norm_scratch_;                  // grad_norm_squared's scratch for shard_grads()
  OwnedTensor own_squared_norm_;              // [1] i64: the squared norm of this rank's shards, a double's bits
  OwnedTensor pipeline_squared_norms_;        // [pp] i64: every pipeline rank's, gathered (pp > 1)
  OwnedTensor rank_squared_norms_;            // [dp x pp] i64: every rank's, gathered (dp > 1)
  OwnedTensor grad_norm_;                     // [1] i64: a double's bits (grad_norm())
  OwnedTensor update_scale_;                  // [1] f32 (update_scale())
  StepProfiler* profiler_ = nullptr;
};

}  // namespace hai
