// Where the stages of each schedule sit, and the shape rules of docs/deepseek-v3.md "DualPipe".

#include <gtest/gtest.h>

#include <string>

#include "framework/core/error.h"
#include "parallel/pipeline/placement.h"

namespace hai {
namespace {

std::string shape_error(PipelineSchedule schedule, int ranks, int micro_batches) {
  try {
    check_pipeline_shape({.schedule = schedule, .ranks = ranks, .micro_batches = micro_batches});
  } catch (const Error& error) {
    return error.message();
  }
  return "";
}

TEST(PipelinePlacement, ShapeRulesFollowTheReference) {
  using enum PipelineSchedule;
  EXPECT_EQ(shape_error(one_f_one_b, 4, 1), "");
  EXPECT_EQ(shape_error(dualpipe, 4, 8), "");
  EXPECT_EQ(shape_error(dualpipev, 4, 9), "");  // dualpipev allows an odd count
  EXPECT_EQ(shape_error(dualpipev, 3, 6), "");  // and an odd pp
  EXPECT_NE(shape_error(one_f_one_b, 4, 0).find("at least one rank and one micro-batch"), std::string::npos);
  EXPECT_NE(shape_error(dualpipe, 3, 6).find("dualpipe needs an even number of pipeline ranks (got 3)"),
            std::string::npos);
  EXPECT_NE(shape_error(dualpipe, 4, 6).find("even number of micro-batches >= 2 x pp = 8 (got 6)"),
            std::string::npos);
  EXPECT_NE(shape_error(dualpipe, 4, 9).find("(got 9)"), std::string::npos);
  EXPECT_NE(shape_error(dualpipev, 4, 7).find("dualpipev needs at least 2 x pp = 8 micro-batches (got 7)"),
            std::string::npos);
}

TEST(PipelinePlacement, OneFOneBHoldsOneStagePerRank) {
  PipelineShape shape{.schedule = PipelineSchedule::one_f_one_b, .ranks = 4, .micro_batches = 4};
  EXPECT_EQ(stage_count(shape), 4);
  EXPECT_EQ(chunk_count(shape), 1);
  for (int stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(rank_of_stage(shape, stage, 3), stage);
    EXPECT_EQ(chunk_of_stage(shape, stage, 3), 0);
    EXPECT_EQ(stage_of_chunk(shape, stage, 0), stage);
  }
}

TEST(PipelinePlacement, DualPipeRunsTheSecondHalfOfTheMicroBatchesUpward) {
  PipelineShape shape{.schedule = PipelineSchedule::dualpipe, .ranks = 4, .micro_batches = 8};
  EXPECT_EQ(stage_count(shape), 4);
  EXPECT_EQ(chunk_count(shape), 2);
  EXPECT_EQ(rank_of_stage(shape, 1, 3), 1);  // micro-batch 3 flows down
  EXPECT_EQ(chunk_of_stage(shape, 1, 3), 0);
  EXPECT_EQ(rank_of_stage(shape, 1, 4), 2);  // micro-batch 4 flows up: stage 1 on rank pp-1-1
  EXPECT_EQ(chunk_of_stage(shape, 1, 4), 1);
  // Rank 0 holds the first stage (embedding) and the last (head, MTP).
  EXPECT_EQ(stage_of_chunk(shape, 0, 0), 0);
  EXPECT_EQ(stage_of_chunk(shape, 0, 1), 3);
  EXPECT_EQ(stage_of_chunk(shape, 2, 1), 1);
}

TEST(PipelinePlacement, DualPipeVFoldsTwoPpStagesIntoAV) {
  PipelineShape shape{.schedule = PipelineSchedule::dualpipev, .ranks = 4, .micro_batches = 8};
  EXPECT_EQ(stage_count(shape), 8);
  EXPECT_EQ(rank_of_stage(shape, 3, 0), 3);
  EXPECT_EQ(rank_of_stage(shape, 4, 0), 3);  // the turn: stages 3 and 4 on the last rank
  EXPECT_EQ(chunk_of_stage(shape, 4, 0), 1);
  EXPECT_EQ(rank_of_stage(shape, 7, 5), 0);
  EXPECT_EQ(stage_of_chunk(shape, 0, 1), 7);
  EXPECT_EQ(stage_of_chunk(shape, 1, 1), 6);
}

}  // namespace
}  // namespace hai
