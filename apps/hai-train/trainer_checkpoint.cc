// Trainer: saving and resuming checkpoints. A checkpoint holds, by global name and in the global shapes:
//   model group: every parameter's fp32 master value (HF names, the routing biases included), each box written by
//                one of the ranks holding it (model/rank_share.h: HeldParameter::counts_here, each tp rank its own
//                box of a parameter split over tp), and there the first rank of the DP group (dense) or of the
//                expert-DP group (a routed expert); a master ZeRO-1 shards (parallel/zero1.h) is written by every
//                rank of that group as the slices its shard holds;
//   optim group: "optimizer.exp_avg.<name>" and "optimizer.exp_avg_sq.<name>" for every trainable parameter (in
//                optimizer.moment_dtype), each rank writing the part its ZeRO-1 shards (dense, expert) hold as
//                slices of the parameter's global shape (a flat range cut into boxes, parallel/flat_range_boxes.h);
//                and "ema.<name>" when the EMA is enabled (by the writer of the value);
// a parameter that several pipeline ranks hold (DualPipe's two copies of a stage) is written by the lowest of them,
// moments included; and as state the step, the data position, the effective config and the layout. Every rank
// writes its files, rank 0 commits with every rank's entries. Resuming reads the whole values and the slices of the
// moments that this rank's shards own, whatever pp, dp, tp and ep wrote them: a checkpoint saved at one layout
// resumes at another.
// A weights-only checkpoint (hai-ckpt import-hf) has no optim-group tensor and no data position: resuming from it
// starts AdamW with zero moments, the EMA at the loaded weights and the data at its first sample.

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "apps/hai-train/trainer.h"
#include "framework/checkpoint/checkpoint_commit.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "framework/checkpoint/checkpoint_retention.h"
#include "framework/checkpoint/checkpoint_writer.h"
#include "framework/checkpoint/resolve_checkpoint.h"
#include "framework/config/write.h"
#include "framework/device/grad_norm.h"
#include "parallel/flat_range_boxes.h"
#include "parallel/rank_values.h"

namespace hai {
namespace {

Tensor value_view(const Tensor& flat, const Parameter& parameter) {
  int64_t numel = parameter.spec.shape.numel();
  return flat.slice(parameter.offset, parameter.offset + numel).reshape(parameter.spec.shape);
}

// This rank's share by name.
std::unordered_map<std::string, const HeldParameter*> held_by_name(const std::vector<HeldParameter>& share) {
  std::unordered_map<std::string, const HeldParameter*> held;
  for (const HeldParameter& parameter : share) held.emplace(parameter.spec.name, &parameter);
  return held;
}

// Calls visit(group, name, held, tensor) for the boxes this rank holds (HeldParameter: the global shape and where
// the box sits), the values (with sharded masters: when staged whole, unless skip_sharded_masters) and the EMA, of
// every parameter for which include(parameter) holds.
template <typename Include, typename Visit>
void for_each_held_box(const ParameterStore& store, const std::vector<HeldParameter>& share, ParameterEma* ema,
                       bool skip_sharded_masters, Include&& include, Visit&& visit) {
  std::unordered_map<std::string, const HeldParameter*> held = held_by_name(share);
  for (const Parameter& parameter : store.parameters()) {
    if (!include(parameter)) continue;
    const HeldParameter& box = *held.at(parameter.spec.name);
    if (!parameter.sharded_master || !skip_sharded_masters) {
      visit(CheckpointGroup::model, parameter.spec.name, box, parameter.value);
    }
    if (ema) visit(CheckpointGroup::optim, "ema." + parameter.spec.name, box, value_view(ema->values(), parameter));
  }
}

// Calls visit(group, name, global_shape, box, tensor) for every slice of the AdamW moments, and of a sharded fp32
// master, that a ZeRO-1 partition's shard holds: `tensor` [box extents] is the view of the shard's moment (master)
// buffer holding the box (in the global shape) of `name`.
template <typename Include, typename Visit>
void for_each_shard_slice(const ParameterStore& store, const std::vector<HeldParameter>& share,
                          const Zero1Partition& partition, Include&& include, Visit&& visit) {
  std::unordered_map<std::string, const HeldParameter*> held = held_by_name(share);
  for (const Parameter& parameter : store.parameters()) {
    if (!parameter.spec.trainable || !include(parameter)) continue;
    int64_t first = std::max(partition.owned_begin(), parameter.grad_offset);
    int64_t last = std::min(partition.owned_end(), parameter.grad_offset + parameter.spec.shape.numel());
    if (first >= last) continue;
    int64_t offset = first - partition.owned_begin();  // into the shard's moment buffers
    const HeldParameter& held_box = *held.at(parameter.spec.name);
    for (SliceBox box : flat_range_boxes(parameter.spec.shape, first - parameter.grad_offset,
                                         last - parameter.grad_offset)) {
      int64_t end = offset + box_volume(box);
      Shape extents(box.extents);
      for (size_t dim = 0; dim < box.offsets.size(); ++dim) box.offsets[dim] += held_box.box_offsets[dim];
      const Shape& global_shape = held_box.spec.shape;
      visit(CheckpointGroup::optim, "optimizer.exp_avg." + parameter.spec.name, global_shape, box,
            partition.exp_avg().slice(offset, end).reshape(extents));
      visit(CheckpointGroup::optim, "optimizer.exp_avg_sq." + parameter.spec.name, global_shape, box,
            partition.exp_avg_sq().slice(offset, end).reshape(extents));
      if (partition.shards_master()) {
        visit(CheckpointGroup::model, parameter.spec.name, global_shape, box,
              partition.master().slice(offset, end).reshape(extents));
      }
      offset = end;
    }
  }
}

// What the checkpoint files are written from: a host tensor itself, or a device tensor's host copy, kept in
// `copies` until the files are written (moving an OwnedTensor keeps its memory where it is).
Tensor on_host(const Tensor& tensor, std::vector<OwnedTensor>& copies) {
  if (tensor.device().is_cpu()) return tensor;
  copies.push_back(host_copy(tensor));
  return copies.back().tensor();
}

// Calls read(t) with a host tensor t of `tensor`'s shape and dtype, and copies it into `tensor` if that is on a
// device (the checkpoint reader fills host memory).
template <typename Read>
void read_into(const Tensor& tensor, Read&& read) {
  if (tensor.device().is_cpu()) return read(tensor);
  OwnedTensor host(tensor.shape(), tensor.dtype());
  read(host.tensor());
  copy_tensor(tensor, host);
}

bool has_optimizer_state(const CheckpointReader& reader) {
  return std::ranges::any_of(reader.tensors(),
                             [](const TensorRecord& tensor) { return tensor.group == CheckpointGroup::optim; });
}

}  // namespace

void Trainer::save_checkpoint() {
  optimizer_.gather_master_values();  // whole values where the store holds them but other ranks update them
  // NOTE: never save weights that are not finite: each rank checks its masters (the EMA is whole), all agree.
  std::vector<Tensor> saved_values = optimizer_.master_values();
  if (ema_) saved_values.push_back(ema_->values());
  double not_finite = std::isfinite(grad_norm_squared(saved_values)) ? 0.0 : 1.0;
  if (sum_over_ranks(world_, not_finite) > 0.0) {
    HAI_THROW("step {}: the training diverged: the weights are not finite (inf or NaN): the checkpoint is not saved, "
              "and the run stops: "
              "resume from the last checkpoint with a smaller optimizer.lr", step_);
  }
  CheckpointWriter writer(config_.checkpoint.dir, step_, world_.rank());
  // NOTE: one writer per tensor: among the pipeline ranks holding it the lowest, there the first rank of the DP
  // group for a dense parameter, of the expert-DP group for an expert; its moments by that pipeline rank's shards.
  std::unordered_set<std::string> counted_here;
  for (const HeldParameter& held : share_) {
    if (held.counts_here(groups_.pp->rank(), groups_.tp->rank())) counted_here.insert(held.spec.name);
  }
  auto writes_moments = [&](const Parameter& parameter) { return counted_here.contains(parameter.spec.name); };
  auto writes = [&](const Parameter& parameter) {
    Communicator& replicas = parameter.spec.group == ParameterGroup::expert ? *groups_.expert_dp : *groups_.dp;
    return writes_moments(parameter) && replicas.rank() == 0;
  };
  std::vector<OwnedTensor> host_copies;  // of device tensors, until the files are written
  // NOTE: a sharded fp32 master is written as the slices each rank's shard holds, beside its moments.
  for_each_held_box(store_, share_, ema_.get(), true, writes,
                    [&](CheckpointGroup group, const std::string& name, const HeldParameter& held,
                        const Tensor& tensor) {
                      writer.add(group, name, held.spec.shape.to_vector(), held.box_offsets,
                                 on_host(tensor, host_copies));
                    });
  auto add_slice = [&](CheckpointGroup group, const std::string& name, const Shape& shape, const SliceBox& box,
                       const Tensor& tensor) {
    writer.add(group, name, shape.to_vector(), box.offsets, on_host(tensor, host_copies));
  };
  for (const Zero1Partition& partition : optimizer_.partitions()) {
    for_each_shard_slice(store_, share_, partition, writes_moments, add_slice);
  }
  std::string rank_entries, problem;
  try {
    rank_entries = writer.write_rank_files();
  } catch (const Error& error) {  // NOTE: a full disk, a quota: the other ranks must not wait for this one
    problem = error.message();
  }
  abandon_failed_save(all_gather_strings(world_, problem));
  std::vector<std::string> entries = all_gather_strings(world_, rank_entries);
  if (is_rank0()) {
    try {
      std::string path = commit_checkpoint(config_.checkpoint.dir, checkpoint_state(), entries,
                                           config_.checkpoint.keep);
      spdlog::info("step {}: saved checkpoint {}", step_, path);
    } catch (const Error& error) {
      problem = error.message();
    }
  }
  abandon_failed_save(all_gather_strings(world_, problem));  // NOTE: also the barrier: committed when any returns
}

CheckpointState Trainer::checkpoint_state() const {
  CheckpointState state;
  state.step = step_;
  state.consumed_samples = static_cast<int64_t>(loader_.position().consumed_samples);
  state.data_position = {{"position", loader_.position().serialize()}};
  state.rng_state = {{"seed", config_.train.seed}, {"generator", "philox4x32-10, keyed by (seed, stream, index)"}};
  state.config = config_to_json(config_);
  state.layout = {{"world", world_.size()}, {"dp", grid_.dp}, {"pp", grid_.pp}, {"tp", grid_.tp},
                  {"ep", config_.parallel.ep}};
  if (loss_scaler_) {
    state.training_state = {{"loss_scale", loss_scaler_->scale()},
                            {"loss_scale_clean_steps", loss_scaler_->clean_steps()}};
  }
  return state;
}

void Trainer::abandon_failed_save(const std::vector<std::string>& rank_problems) {
  auto failed = std::find_if(rank_problems.begin(), rank_problems.end(),
                             [](const std::string& text) { return !text.empty(); });
  if (failed == rank_problems.end()) return;
  // The step's .tmp directory goes; `latest` and the complete checkpoints were never touched.
  if (is_rank0()) remove_unfinished_checkpoints(config_.checkpoint.dir, step_);
  world_.barrier();
  HAI_THROW("step {}: the checkpoint could not be saved (rank {}: {}); its partial files are removed and the "
            "previous checkpoint stays the latest: free space in {} and resume",
            step_, failed - rank_problems.begin(), *failed, config_.checkpoint.dir);
}

int64_t Trainer::resume(bool restore_data_position) {
  std::vector<std::string> candidates = resume_candidates(config_.checkpoint.dir, config_.checkpoint.resume);
  std::string first_problem;
  for (const std::string& path : candidates) {
    std::string problem;
    try {
      load_checkpoint(path, restore_data_position);
    } catch (const Error& error) {
      problem = error.message();
    }
    // NOTE: a rank may fail alone (its slices are corrupt): every rank moves on to the same next checkpoint.
    if (sum_over_ranks(world_, problem.empty() ? 0.0 : 1.0) == 0.0) {
      if (path != candidates.front()) {
        spdlog::warn("resumed from {}, an older checkpoint than {}, which failed to load", path, candidates.front());
      }
      spdlog::info("resumed from {} at step {}", path, step_);
      resumed_from_ = path;
      return step_;
    }
    if (!problem.empty()) spdlog::error("cannot resume from {}: {}", path, problem);
    if (first_problem.empty()) first_problem = problem.empty() ? "it failed to load on another rank" : problem;
    if (config_.checkpoint.resume != "auto") break;
    spdlog::warn("checkpoint {} does not load; trying the next older one (checkpoint.resume auto)", path);
  }
  if (!candidates.empty()) {
    HAI_THROW("no checkpoint of checkpoint.resume = {} loads (newest: {}: {})", config_.checkpoint.resume,
              candidates.front(), first_problem);
  }
  return 0;
}

void Trainer::load_checkpoint(const std::string& path, bool restore_data_position) {
  CheckpointReader reader(path);
  bool weights_only = !has_optimizer_state(reader);
  // NOTE: every value whole, the sharded masters' where they are staged: the compute copy is rounded from them.
  for_each_held_box(store_, share_, ema_.get(), false, [](const Parameter&) { return true; },
                    [&](CheckpointGroup group, const std::string& name, const HeldParameter& held,
                        const Tensor& tensor) {
                      if (group != CheckpointGroup::model && weights_only) return;
                      if (reader.tensor(name).shape != held.spec.shape.to_vector()) {
                        HAI_THROW("{}: tensor '{}' has shape [{}], the model's is {}", path, name,
                                  fmt::join(reader.tensor(name).shape, ", "), held.spec.shape.str());
                      }
                      read_into(tensor, [&](const Tensor& host) { reader.read_slice(name, held.box_offsets, host); });
                    });
  const std::vector<Zero1Partition>& partitions = optimizer_.partitions();
  for (size_t i = 0; !weights_only && i < partitions.size(); ++i) {
    for_each_shard_slice(store_, share_, partitions[i], [](const Parameter&) { return true; },
                         [&](CheckpointGroup group, const std::string& name, const Shape&, const SliceBox& box,
                             const Tensor& tensor) {
      if (group == CheckpointGroup::model) return;  // the master: taken from the whole values above
      read_into(tensor, [&](const Tensor& host) { reader.read_slice(name, box.offsets, host); });
    });
  }
  store_.refresh_compute_copy();
  optimizer_.take_master_values();  // the sharded masters' shards, from the whole values just read
  if (weights_only && ema_) store_.read_values(ema_->values());
  const CheckpointState& state = reader.state();
  step_ = state.step;
  if (weights_only) return;
  // NOTE: --eval-only reads no training data, so the saved position (of data it may not have) is not restored.
  if (restore_data_position) {
    loader_.set_position(DataPosition::parse(state.data_position.at("position").get<std::string>()));
  }
  if (loss_scaler_ && state.training_state.contains("loss_scale")) {
    loss_scaler_->restore(state.training_state.at("loss_scale").get<double>(),
                          state.training_state.at("loss_scale_clean_steps").get<int64_t>());
  }
}

}  // namespace hai
