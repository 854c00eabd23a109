#include "model/pipeline_model.h"

namespace hai {

PipelineModel::PipelineModel(const ModelConfig& model, const ParameterStore& store,
                             const std::vector<StageLayers>& stages, const std::vector<int>& held_stages,
                             ExpertExchange* experts, TensorParallel tp)
    : config_(model), store_(store), rope_(model, store.values().device()) {
  for (int index : held_stages) {
    HAI_CHECK(index >= 0 && index < static_cast<int>(stages.size()), "pipeline model: stage {} of {}", index,
              stages.size());
    stages_[index] = std::make_unique<PipelineStage>(model, store, stages[static_cast<size_t>(index)],
                                                     rope_.table(), experts, tp);
  }
}

PipelineModel::~PipelineModel() = default;

Shape PipelineModel::boundary_shape(int64_t tokens) const {
  HAI_CHECK(!stages_.empty(), "pipeline model: no stage held");
  return stages_.begin()->second->hidden_shape(tokens);
}

void PipelineModel::set_recompute(RecomputeMode mode) {
  for (auto& [index, stage] : stages_) stage->set_recompute(mode);
}

void PipelineModel::set_profiler(StepProfiler* profiler) {
  profiler_ = profiler;
  for (auto& [index, stage] : stages_) stage->set_profiler(profiler);
}

void PipelineModel::set_parameters_needed(const ParametersNeeded& needed) {
  for (auto& [index, stage] : stages_) stage->set_parameters_needed(needed);
}

void PipelineModel::start_step(const std::vector<Tensor>& tokens, float grad_scale, const Tensor& loss_sums,
                               const Tensor& expert_load) {
  HAI_CHECK(!tokens.empty(), "pipeline model: a step needs micro-batches");
  check_shape(loss_sums, Shape{static_cast<int64_t>(tokens.size()), loss_slots(config_.mtp_depth)}, "loss sums");
  HAI_CHECK(contexts_.empty(), "pipeline model: {} micro-batch contexts of the last step were never released",
            contexts_.size());
  batches_.clear();
  for (const Tensor& window : tokens) {
    mark_phase(profiler_, "forward.inputs_upload");
    batches_.push_back(upload_micro_batch(window, config_.mtp_depth, device()));
  }
  boundary_shape_ = boundary_shape(batches_.front().inputs.numel());
  grad_scale_ = grad_scale;
  loss_sums_ = loss_sums;
  expert_load_ = expert_load;
  zero_fill(loss_sums);
}

std::vector<CountedTokens> PipelineModel::counted() const {
  std::vector<CountedTokens> counted;
  for (const MicroBatchInputs& batch : batches_) counted.push_back(batch.counted);
  return counted;
}

void PipelineModel::evaluate(int stage_index, const MicroBatchInputs& batch, const Tensor& input,
                             const Tensor& output, const Tensor& loss_sums) const {
  PipelineStage::Context context;
  stage(stage_index).forward(context, batch, input, output, loss_sums, Tensor(), std::nullopt);
}

void PipelineModel::forward(int stage_index, int microbatch, const Tensor& input, const Tensor& output) {
  auto [where, inserted] = contexts_.try_emplace({stage_index, microbatch});
  HAI_CHECK(inserted, "pipeline model: F of stage {} for micro-batch {} twice", stage_index, microbatch);
  Tensor loss_sums = loss_sums_.slice(microbatch, microbatch + 1).reshape(Shape{loss_sums_.size(1)});  // [slots]
  stage(stage_index).forward(where->second, batch(microbatch), input, output, loss_sums, expert_load_,
                             grad_scale_);
}

void PipelineModel::backward_input(int stage_index, int microbatch, const Tensor& d_output, const Tensor& d_input) {
  const PipelineStage& held = stage(stage_index);
  if (held.whole_model()) {
    held.backward(context(stage_index, microbatch), batch(microbatch), d_output, d_input, grad_scale_,
                  gradients_final(microbatch));
  } else {
    held.backward_input(context(stage_index, microbatch), batch(microbatch), d_output, d_input, grad_scale_);
  }
}

void PipelineModel::backward_weight(int stage_index, int microbatch) {
  const PipelineStage& held = stage(stage_index);
  PipelineStage::Context& ctx = context(stage_index, microbatch);
  if (!held.whole_model()) held.backward_weight(ctx, batch(microbatch), gradients_final(microbatch));
  contexts_.erase({stage_index, microbatch});
}

GradientsFinal PipelineModel::gradients_final(int microbatch) const {
  return microbatch + 1 == static_cast<int>(batches_.size()) ? on_final_ : nullptr;
}

const PipelineStage& PipelineModel::stage(int index) const {
  auto found = stages_.find(index);
  HAI_CHECK(found != stages_.end(), "pipeline model: stage {} is not on this rank", index);
  return *found->second;
}

const MicroBatchInputs& PipelineModel::batch(int microbatch) const {
  HAI_CHECK(microbatch >= 0 && microbatch < static_cast<int>(batches_.size()),
            "pipeline model: micro-batch {} outside the step's {}", microbatch, batches_.size());
  return batches_[static_cast<size_t>(microbatch)];
}

PipelineStage::Context& PipelineModel::context(int stage, int microbatch) {
  auto found = contexts_.find({stage, microbatch});
  HAI_CHECK(found != contexts_.end(), "pipeline model: no F of stage {} for micro-batch {}", stage, microbatch);
  return found->second;
}

}  // namespace hai
