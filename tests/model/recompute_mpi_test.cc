// Activation recomputation on CPU ranks changes no bit either (docs/design/recompute.md): on every rank the same
// layout is trained with and without recomputation and the losses, the rank's gradients and routed-token counts are
// compared bit for bit, under selective and full, in fp32, bf16 and fp8.
// - Expert parallelism over the whole world (ep = ranks, the tiny model's 8 experts split): full recomputation
//   re-runs each MoE layer's dispatch and combine exchanges at the start of its backward; selective recomputes the
//   routed experts' outputs and returns them by the combine's exchange again.
// - Two DualPipe (and DualPipeV) pipeline ranks per dp rank, with ep = dp (4 ranks: pp 2 x ep 2): the recomputed
//   exchanges run in the backward chunks that DualPipe interleaves with other micro-batches' forward chunks, in the
//   same order on every rank of an ep group (they run the same schedule), so they pair up and nothing waits forever.

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "framework/config/config_enums.h"
#include "framework/core/rng.h"
#include "model/deepseek_v3_model.h"
#include "model/expert_parallel_parameters.h"
#include "model/parameters.h"
#include "tests/model/recompute_cases.h"
#include "model/pipeline_model.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/topology.h"
#include "tests/framework/comm/world_fixture.h"
#include "tests/model/model_test_inputs.h"

namespace hai {
namespace {

using testing::same_bits;

// [2, 7] token windows of micro-batch `micro_batch` of step `step`, different on each data-parallel rank.
OwnedTensor tokens_of(int step, int micro_batch, int data_rank, const ModelConfig& model) {
  return testing::random_tokens(2, 6, model.vocab_size,
                                CounterRng(static_cast<uint64_t>(step * 100 + data_rank), micro_batch));
}

void expect_same_gradients(const ParameterStore& expected, const ParameterStore& actual, const std::string& what) {
  for (size_t i = 0; i < expected.parameters().size(); ++i) {
    EXPECT_TRUE(same_bits(expected.parameters()[i].grad, actual.parameters()[i].grad))
        << what << " " << expected.parameters()[i].spec.name;
  }
}

class RecomputeWorld : public testing::World, public ::testing::WithParamInterface<testing::RecomputeCase> {
 protected:
  // Trains one step with and without recomputation on pp 2 ranks under `pipeline_schedule`; expects the same bits.
  void expect_pipeline_bits_of_none(PipelineSchedule pipeline_schedule);

  ModelConfig config_ = testing::tiny_test_model(4);
};

// The whole model on each rank with the routed experts split over all ranks: two steps of two micro-batches.
TEST_P(RecomputeWorld, ExpertParallelLossesAndGradientsAreTheBitsOfNone) {
  ParallelGroups groups = make_parallel_groups(*world_, GridShape{.dp = size(), .ep = size()});
  struct Trained {
    std::unique_ptr<ParameterStore> store;
    std::unique_ptr<ExpertExchange> exchange;
    std::unique_ptr<DeepseekV3Model> model;
    std::vector<OwnedTensor> losses;
  };
  auto run = [&](RecomputeMode recompute) {
    Trained result;
    result.store =
        testing::precision_store(expert_parallel_parameters(config_, groups.ep->rank(), size()), GetParam().precision);
    result.exchange = std::make_unique<ExpertExchange>(*groups.ep, config_.moe.routed_experts);
    result.model = std::make_unique<DeepseekV3Model>(config_, *result.store, result.exchange.get());
    result.model->set_recompute(recompute);
    for (int step = 0; step < 2; ++step) {
      result.store->zero_grads();
      for (int micro_batch = 0; micro_batch < 2; ++micro_batch) {
        OwnedTensor sums(Shape{loss_slots(config_.mtp_depth)}, DType::f32);
        result.model->train_micro_batch(tokens_of(step, micro_batch, rank(), config_), 0.5f, sums);
        result.losses.push_back(std::move(sums));
      }
    }
    result.store->zero_unwritten_grads();
    return result;
  };
  Trained expected = run(RecomputeMode::none);
  Trained actual = run(GetParam().recompute);
  for (size_t i = 0; i < expected.losses.size(); ++i) {
    EXPECT_TRUE(same_bits(expected.losses[i], actual.losses[i])) << "micro-batch " << i;
  }
  expect_same_gradients(*expected.store, *actual.store, "ep " + std::to_string(size()));
  EXPECT_TRUE(same_bits(expected.model->expert_load(), actual.model->expert_load()));
}

// pp 2 under DualPipe and DualPipeV, dp = ep = ranks / 2: one step of 4 micro-batches.
TEST_P(RecomputeWorld, DualPipeAndDualPipeVWithExpertParallelLossesAndGradientsAreTheBitsOfNone) {
  for (PipelineSchedule schedule : {PipelineSchedule::dualpipe, PipelineSchedule::dualpipev}) {
    SCOPED_TRACE(std::string(to_string(schedule)));
    expect_pipeline_bits_of_none(schedule);
  }
}

void RecomputeWorld::expect_pipeline_bits_of_none(PipelineSchedule pipeline_schedule) {
  GridShape grid{.dp = size() / 2, .pp = 2, .ep = size() / 2};
  ParallelGroups groups = make_parallel_groups(*world_, grid);
  PipelineShape shape{.schedule = pipeline_schedule, .ranks = 2, .micro_batches = 4};
  Schedule schedule = build_schedule(shape);
  int pipeline_rank = groups.pp->rank();
  std::vector<int> held;
  for (int chunk = 0; chunk < chunk_count(shape); ++chunk) held.push_back(stage_of_chunk(shape, pipeline_rank, chunk));
  struct Trained {
    std::unique_ptr<ParameterStore> store;
    std::unique_ptr<ExpertExchange> exchange;
    std::unique_ptr<PipelineModel> model;
    OwnedTensor losses, load;
  };
  auto run = [&](RecomputeMode recompute) {
    Trained result;
    result.store =
        testing::precision_store(expert_parallel_parameters(config_, groups.ep->rank(), grid.ep), GetParam().precision);
    if (grid.ep > 1) result.exchange = std::make_unique<ExpertExchange>(*groups.ep, config_.moe.routed_experts);
    result.model = std::make_unique<PipelineModel>(config_, *result.store,
                                                   pipeline_stages(config_, stage_count(shape), {}), held,
                                                   result.exchange.get());
    result.model->set_recompute(recompute);
    std::vector<OwnedTensor> windows;
    std::vector<Tensor> tokens;
    for (int micro_batch = 0; micro_batch < shape.micro_batches; ++micro_batch) {
      windows.push_back(tokens_of(0, micro_batch, groups.dp->rank(), config_));
      tokens.push_back(windows.back());
    }
    result.losses = OwnedTensor(Shape{shape.micro_batches, loss_slots(config_.mtp_depth)}, DType::f32);
    result.load = zero_tensor(Shape{config_.num_layers + config_.mtp_depth - config_.first_dense_layers,
                                    config_.moe.routed_experts},
                              DType::i32);
    result.store->zero_grads();
    result.model->start_step(tokens, 0.25f, result.losses, result.load);
    PipelineEngine engine(shape, *groups.pp);
    engine.run(schedule.ranks[static_cast<size_t>(pipeline_rank)], *result.model);
    result.store->zero_unwritten_grads();
    return result;
  };
  Trained expected = run(RecomputeMode::none);
  Trained actual = run(GetParam().recompute);
  EXPECT_TRUE(same_bits(expected.losses, actual.losses));
  expect_same_gradients(*expected.store, *actual.store, "pipeline rank " + std::to_string(pipeline_rank));
  EXPECT_TRUE(same_bits(expected.load, actual.load));
}

INSTANTIATE_TEST_SUITE_P(Modes, RecomputeWorld, testing::recompute_cases(), testing::recompute_case_name);

}  // namespace
}  // namespace hai
