// The activation term of the memory plan counts, on each pipeline rank, the micro-batch activations the schedule
// simulator finds alive at once there (live_micro_batches, model/memory_estimate.h): the known peaks of 1F1B
// (rank r: pp - r), DualPipe (pp + 1 on every rank) and DualPipeV (2 pp + 1 of its half-size stages) for pp 2, 4
// and 16, and the plan's activations follow them rank by rank.

#include <gtest/gtest.h>

#include <vector>

#include "framework/config/config.h"
#include "model/memory_estimate.h"
#include "tests/model/model_test_inputs.h"

namespace hai {
namespace {

Config pipeline_config(PipelineSchedule schedule, int64_t pp, int64_t micro_batches) {
  Config config;
  config.model = testing::tiny_test_model(64);
  config.model.mtp_depth = 0;
  config.train.seq_len = 6;
  config.train.micro_batch_size = 2;
  config.parallel.pp = pp;
  config.parallel.schedule = schedule;
  config.parallel.dp = IntOrAuto{1};
  config.parallel.micro_batches = IntOrAuto{micro_batches};
  return config;
}

TEST(LiveMicroBatchesTest, MatchTheSchedulesKnownPeaks) {
  for (int64_t pp : {2, 4, 16}) {
    for (int64_t micro_batches : {2 * pp, 4 * pp + 2}) {
      std::vector<int64_t> one_f_one_b, dualpipe, dualpipev;
      for (int64_t r = 0; r < pp; ++r) {
        one_f_one_b.push_back(pp - r);
        dualpipe.push_back(pp + 1);
        dualpipev.push_back(2 * pp + 1);
      }
      SCOPED_TRACE(::testing::Message() << "pp " << pp << ", " << micro_batches << " micro-batches");
      EXPECT_EQ(live_micro_batches(pipeline_config(PipelineSchedule::one_f_one_b, pp, micro_batches)), one_f_one_b);
      EXPECT_EQ(live_micro_batches(pipeline_config(PipelineSchedule::dualpipe, pp, micro_batches)), dualpipe);
      EXPECT_EQ(live_micro_batches(pipeline_config(PipelineSchedule::dualpipev, pp, micro_batches)), dualpipev);
    }
  }
  EXPECT_EQ(live_micro_batches(pipeline_config(PipelineSchedule::one_f_one_b, 1, 4)), std::vector<int64_t>{1});
  // Fewer micro-batches than ranks: 1F1B's first rank holds all of them, no more.
  EXPECT_EQ(live_micro_batches(pipeline_config(PipelineSchedule::one_f_one_b, 4, 2)),
            (std::vector<int64_t>{2, 2, 2, 1}));
}

// Under 1F1B the plan's activations follow the live micro-batches: ranks 1 and 2 run equal stages of MoE layers and
// hold 3 and 2 micro-batches (without recomputation nothing else is planned for them).
TEST(LiveMicroBatchesTest, OneFOneBPlansLessOnLaterRanks) {
  Config config = pipeline_config(PipelineSchedule::one_f_one_b, 4, 8);
  config.train.recompute = RecomputeMode::none;
  std::vector<PipelineRankMemory> plan = estimate_pipeline_memory(config);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_GT(plan[1].memory.activations, 0);
  EXPECT_EQ(2 * plan[1].memory.activations, 3 * plan[2].memory.activations);
}

}  // namespace
}  // namespace hai
