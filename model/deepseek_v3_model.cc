#include "model/deepseek_v3_model.h"

#include "model/pipeline_stage.h"
#include "model/router_biases.h"
#include "parallel/pipeline/schedule.h"

namespace hai {
namespace {

// One micro-batch on one rank: the whole model is the one stage.
constexpr PipelineShape kOneMicroBatch{.schedule = PipelineSchedule::one_f_one_b, .ranks = 1, .micro_batches = 1};

}  // namespace

DeepseekV3Model::DeepseekV3Model(const ModelConfig& model, const ParameterStore& store, ExpertExchange* experts,
                                 TensorParallel tp)
    : config_(model),
      store_(store),
      stages_(model, store, pipeline_stages(model, 1, {}), /*held_stages=*/{0}, experts, tp),
      engine_(kOneMicroBatch, rank_),
      program_(build_schedule(kOneMicroBatch).ranks.front()),
      moe_layer_indices_(moe_block_indices(model)),
      expert_load_(zero_tensor(Shape{static_cast<int64_t>(moe_layer_indices_.size()), model.moe.routed_experts},
                               DType::i32, store.values().device())) {}

DeepseekV3Model::~DeepseekV3Model() = default;

CountedTokens DeepseekV3Model::train_micro_batch(const Tensor& tokens, float grad_scale, const Tensor& loss_sums,
                                                 const GradientsFinal& on_final) {
  check_shape(loss_sums, Shape{loss_slots(config_.mtp_depth)}, "loss sums");
  check_dtype(loss_sums, DType::f32, "loss sums");
  HAI_CHECK(loss_sums.device() == device(), "loss sums on {}, the model on {}", to_string(loss_sums.device()),
            to_string(device()));
  stages_.set_gradients_final(on_final);
  stages_.start_step({tokens}, grad_scale, loss_sums.reshape(Shape{1, loss_sums.numel()}), expert_load_);
  engine_.run(program_, stages_);
  stages_.set_gradients_final(nullptr);
  return stages_.counted().front();
}

MicroBatchLosses DeepseekV3Model::train_micro_batch(const Tensor& tokens, float grad_scale) {
  OwnedTensor loss_sums(Shape{loss_slots(config_.mtp_depth)}, DType::f32, device());
  CountedTokens counted = train_micro_batch(tokens, grad_scale, loss_sums);
  return read_back(loss_sums, counted);
}

MicroBatchLosses DeepseekV3Model::evaluate(const Tensor& tokens) {
  MicroBatchInputs batch = upload_micro_batch(tokens, config_.mtp_depth, device());
  OwnedTensor loss_sums = zero_tensor(Shape{loss_slots(config_.mtp_depth)}, DType::f32, device());
  stages_.evaluate(0, batch, Tensor(), Tensor(), loss_sums);
  return read_back(loss_sums, batch.counted);
}

MicroBatchLosses DeepseekV3Model::read_back(const Tensor& loss_sums, const CountedTokens& counted) const {
  OwnedTensor host(loss_sums.shape(), DType::f32);
  copy_tensor(host, loss_sums);
  return read_losses(host, counted);
}

void DeepseekV3Model::reset_expert_load() { zero_fill(expert_load_); }

void DeepseekV3Model::update_router_biases(float gamma, const Tensor& update_scale) {
  hai::update_router_biases(config_, store_, expert_load(), gamma, update_scale);
}

}  // namespace hai
