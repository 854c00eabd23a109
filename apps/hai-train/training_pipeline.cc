#include "apps/hai-train/training_pipeline.h"

#include "framework/core/error.h"

namespace hai {
namespace {

PipelineShape pipeline_shape(const Config& config) {
  return {.schedule = config.parallel.schedule,
          .ranks = static_cast<int>(config.parallel.pp),
          .micro_batches = static_cast<int>(config.parallel.micro_batches.value())};
}

// The stages pipeline rank `rank` holds: one per chunk (two under DualPipe(V)).
std::vector<int> held_stages(const PipelineShape& shape, int rank) {
  std::vector<int> stages;
  for (int chunk = 0; chunk < chunk_count(shape); ++chunk) stages.push_back(stage_of_chunk(shape, rank, chunk));
  return stages;
}

}  // namespace

TrainingPipeline::TrainingPipeline(const Config& config, const ParameterStore& store, Communicator& pipeline,
                                   ExpertExchange* experts)
    : store_(store),
      pipeline_(pipeline),
      schedule_(build_schedule(pipeline_shape(config))),
      model_(config.model, store,
             pipeline_stages(config.model, stage_count(schedule_.shape), config.parallel.stage_layers),
             held_stages(schedule_.shape, pipeline.rank()), experts),
      engine_(schedule_.shape, pipeline) {
  HAI_CHECK(pipeline.size() == schedule_.shape.ranks, "the pipeline group has {} ranks, parallel.pp is {}",
            pipeline.size(), schedule_.shape.ranks);
}

std::vector<CountedTokens> TrainingPipeline::train_step(const std::vector<Tensor>& tokens, float grad_scale,
                                                        const Tensor& loss_sums, const Tensor& expert_load) {
  HAI_CHECK(static_cast<int>(tokens.size()) == schedule_.shape.micro_batches,
            "a pipelined step takes {} micro-batches, got {}", schedule_.shape.micro_batches, tokens.size());
  model_.start_step(tokens, grad_scale, loss_sums, expert_load);
  engine_.run(schedule_.ranks[static_cast<size_t>(pipeline_.rank())], model_);
  // NOTE: each rank holds only its stages' parts (zero elsewhere), so the sums are the whole model's.
  pipeline_.all_reduce(loss_sums, ReduceOp::sum);
  pipeline_.all_reduce(store_.grads(), ReduceOp::sum);
  pipeline_.all_reduce(expert_load, ReduceOp::sum);
  return model_.counted();
}

}  // namespace hai
