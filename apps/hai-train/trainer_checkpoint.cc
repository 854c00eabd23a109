// Trainer: saving and resuming checkpoints. A checkpoint holds, by global name:
//   model group: every parameter's fp32 master value (HF names, the routing biases included);
//   optim group: "optimizer.exp_avg.<name>" and "optimizer.exp_avg_sq.<name>" for every trainable parameter (in
//                optimizer.moment_dtype), and "ema.<name>" when the EMA is enabled;
// and as state the step, the data position and the effective config.
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

namespace hai {
namespace {

// The view of a parameter inside one of the flat buffers that follow the gradient layout ([N_trainable]).
Tensor trainable_view(const Tensor& flat, const Parameter& parameter) {
  int64_t numel = parameter.spec.shape.numel();
  return flat.slice(parameter.grad_offset, parameter.grad_offset + numel).reshape(parameter.spec.shape);
}

Tensor value_view(const Tensor& flat, const Parameter& parameter) {
  int64_t numel = parameter.spec.shape.numel();
  return flat.slice(parameter.offset, parameter.offset + numel).reshape(parameter.spec.shape);
}

// Calls visit(group, name, tensor) for every tensor a checkpoint holds.
template <typename Visit>
void for_each_checkpoint_tensor(const ParameterStore& store, const AdamW& optimizer, ParameterEma* ema,
                                Visit&& visit) {
  for (const Parameter& parameter : store.parameters()) {
    const std::string& name = parameter.spec.name;
    visit(CheckpointGroup::model, name, parameter.value);
    if (parameter.spec.trainable) {
      visit(CheckpointGroup::optim, "optimizer.exp_avg." + name, trainable_view(optimizer.exp_avg(), parameter));
      visit(CheckpointGroup::optim, "optimizer.exp_avg_sq." + name,
            trainable_view(optimizer.exp_avg_sq(), parameter));
    }
    if (ema) visit(CheckpointGroup::optim, "ema." + name, value_view(ema->values(), parameter));
  }
}

bool has_optimizer_state(const CheckpointReader& reader) {
  return std::ranges::any_of(reader.tensors(),
                             [](const TensorRecord& tensor) { return tensor.group == CheckpointGroup::optim; });
}

}  // namespace

void Trainer::save_checkpoint() {
  CheckpointWriter writer(config_.checkpoint.dir, step_);
  for_each_checkpoint_tensor(store_, optimizer_, ema_.get(),
                             [&](CheckpointGroup group, const std::string& name, const Tensor& tensor) {
                               writer.add(group, name, tensor);
                             });
  std::string entries = writer.write_rank_files();
  CheckpointState state;
  state.step = step_;
  state.consumed_samples = static_cast<int64_t>(loader_.position().consumed_samples);
  state.data_position = {{"position", loader_.position().serialize()}};
  state.rng_state = {{"seed", config_.train.seed}, {"generator", "philox4x32-10, keyed by (seed, stream, index)"}};
  state.config = config_to_json(config_);
  state.layout = {{"world", 1}, {"dp", 1}, {"pp", 1}, {"tp", 1}, {"ep", 1}};
  std::string path = commit_checkpoint(config_.checkpoint.dir, state, {entries}, config_.checkpoint.keep);
  spdlog::info("step {}: saved checkpoint {}", step_, path);
}

int64_t Trainer::resume() {
  std::optional<std::string> path = resolve_checkpoint(config_.checkpoint.dir, config_.checkpoint.resume);
  if (!path) return 0;
  CheckpointReader reader(*path);
  bool weights_only = !has_optimizer_state(reader);
  for_each_checkpoint_tensor(store_, optimizer_, ema_.get(),
                             [&](CheckpointGroup group, const std::string& name, const Tensor& tensor) {
                               if (group == CheckpointGroup::model || !weights_only) reader.read(name, tensor);
                             });
  store_.refresh_compute_copy();
  if (weights_only && ema_) copy_tensor(ema_->values(), store_.values());
  const CheckpointState& state = reader.state();
  step_ = state.step;
  if (!weights_only) {
    loader_.set_position(DataPosition::parse(state.data_position.at("position").get<std::string>()));
  }
  spdlog::info("resumed from {} at step {}", *path, step_);
  return step_;
}

}  // namespace hai
