// Trainer: saving and resuming checkpoints. A checkpoint holds, by global name:
//   model group: every parameter's fp32 master value (HF names, the routing biases included), written by rank 0
//                (every rank holds the same values);
//   optim group: "optimizer.exp_avg.<name>" and "optimizer.exp_avg_sq.<name>" for every trainable parameter (in
//                optimizer.moment_dtype), each rank writing the part its ZeRO-1 shard holds as slices of the
//                parameter's global shape (a flat range cut into boxes, parallel/flat_range_boxes.h); and
//                "ema.<name>" when the EMA is enabled (rank 0);
// and as state the step, the data position, the effective config and the layout. Every rank writes its files,
// rank 0 commits with every rank's entries. Resuming reads the whole values and the slices of the moments that
// this rank's shard owns, whatever dp wrote them: a checkpoint saved at one dp resumes at another.
// A weights-only checkpoint (hai-ckpt import-hf) has no optim-group tensor and no data position: resuming from it
// starts AdamW with zero moments, the EMA at the loaded weights and the data at its first sample.

#include <algorithm>

#include <spdlog/spdlog.h>

#include "apps/hai-train/trainer.h"
#include "framework/checkpoint/checkpoint_commit.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "framework/checkpoint/checkpoint_writer.h"
#include "framework/checkpoint/resolve_checkpoint.h"
#include "framework/config/write.h"
#include "parallel/flat_range_boxes.h"
#include "parallel/rank_values.h"

namespace hai {
namespace {

Tensor value_view(const Tensor& flat, const Parameter& parameter) {
  int64_t numel = parameter.spec.shape.numel();
  return flat.slice(parameter.offset, parameter.offset + numel).reshape(parameter.spec.shape);
}

// Calls visit(group, name, tensor) for every tensor that every rank holds whole: the values and the EMA.
template <typename Visit>
void for_each_replicated_tensor(const ParameterStore& store, ParameterEma* ema, Visit&& visit) {
  for (const Parameter& parameter : store.parameters()) {
    visit(CheckpointGroup::model, parameter.spec.name, parameter.value);
    if (ema) visit(CheckpointGroup::optim, "ema." + parameter.spec.name, value_view(ema->values(), parameter));
  }
}

// Calls visit(name, global_shape, box, tensor) for every slice of the AdamW moments this rank's shard holds:
// `tensor` [box extents] is the view of the shard's moment buffer holding the box of parameter `name`.
template <typename Visit>
void for_each_moment_slice(const ParameterStore& store, const Zero1Optimizer& optimizer, Visit&& visit) {
  const FlatShard& shard = optimizer.shard();
  for (const Parameter& parameter : store.parameters()) {
    if (!parameter.spec.trainable) continue;
    int64_t first = std::max(shard.begin, parameter.grad_offset);
    int64_t last = std::min(shard.end, parameter.grad_offset + parameter.spec.shape.numel());
    if (first >= last) continue;
    int64_t offset = first - shard.begin;  // into the shard's moment buffers
    for (const SliceBox& box : flat_range_boxes(parameter.spec.shape, first - parameter.grad_offset,
                                                last - parameter.grad_offset)) {
      int64_t end = offset + box_volume(box);
      Shape extents(box.extents);
      visit("optimizer.exp_avg." + parameter.spec.name, parameter.spec.shape, box,
            optimizer.exp_avg().slice(offset, end).reshape(extents));
      visit("optimizer.exp_avg_sq." + parameter.spec.name, parameter.spec.shape, box,
            optimizer.exp_avg_sq().slice(offset, end).reshape(extents));
      offset = end;
    }
  }
}

bool has_optimizer_state(const CheckpointReader& reader) {
  return std::ranges::any_of(reader.tensors(),
                             [](const TensorRecord& tensor) { return tensor.group == CheckpointGroup::optim; });
}

}  // namespace

void Trainer::save_checkpoint() {
  CheckpointWriter writer(config_.checkpoint.dir, step_, world_.rank());
  if (is_rank0()) {
    for_each_replicated_tensor(store_, ema_.get(), [&](CheckpointGroup group, const std::string& name,
                                                       const Tensor& tensor) { writer.add(group, name, tensor); });
  }
  for_each_moment_slice(store_, optimizer_, [&](const std::string& name, const Shape& shape, const SliceBox& box,
                                                const Tensor& tensor) {
    writer.add(CheckpointGroup::optim, name, shape.to_vector(), box.offsets, tensor);
  });
  std::vector<std::string> entries = all_gather_strings(world_, writer.write_rank_files());
  if (is_rank0()) {
    CheckpointState state;
    state.step = step_;
    state.consumed_samples = static_cast<int64_t>(loader_.position().consumed_samples);
    state.data_position = {{"position", loader_.position().serialize()}};
    state.rng_state = {{"seed", config_.train.seed},
                       {"generator", "philox4x32-10, keyed by (seed, stream, index)"}};
    state.config = config_to_json(config_);
    state.layout = {{"world", world_.size()}, {"dp", grid_.dp}, {"pp", grid_.pp}, {"tp", grid_.tp},
                    {"ep", config_.parallel.ep}};
    std::string path = commit_checkpoint(config_.checkpoint.dir, state, entries, config_.checkpoint.keep);
    spdlog::info("step {}: saved checkpoint {}", step_, path);
  }
  world_.barrier();  // the checkpoint is committed when any rank returns
}

int64_t Trainer::resume() {
  std::optional<std::string> path = resolve_checkpoint(config_.checkpoint.dir, config_.checkpoint.resume);
  if (!path) return 0;
  CheckpointReader reader(*path);
  bool weights_only = !has_optimizer_state(reader);
  for_each_replicated_tensor(store_, ema_.get(),
                             [&](CheckpointGroup group, const std::string& name, const Tensor& tensor) {
                               if (group == CheckpointGroup::model || !weights_only) reader.read(name, tensor);
                             });
  if (!weights_only) {
    for_each_moment_slice(store_, optimizer_, [&](const std::string& name, const Shape&, const SliceBox& box,
                                                  const Tensor& tensor) {
      reader.read_slice(name, box.offsets, tensor);
    });
  }
  store_.refresh_compute_copy();
  if (weights_only && ema_) copy_tensor(ema_->values(), store_.values());
  const CheckpointState& state = reader.state();
  step_ = state.step;
  if (!weights_only) {
    loader_.set_position(DataPosition::parse(state.data_position.at("position").get<std::string>()));
  }
  spdlog::info("resumed from {} at step {}", *path, step_);
  resumed_from_ = path;
  return step_;
}

}  // namespace hai
