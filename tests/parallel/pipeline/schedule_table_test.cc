// The rank x time table and the --schedule-only report, on shapes small enough to check by hand.

#include <gtest/gtest.h>

#include <string>

#include "framework/core/error.h"
#include "parallel/pipeline/schedule_report.h"
#include "parallel/pipeline/schedule_table.h"

namespace hai {
namespace {

TEST(PipelineScheduleTable, OneFOneBOnTwoRanks) {
  // Rank 1 answers each forward at once, so rank 0 waits one unit for the first and the last gradient.
  Schedule schedule = build_schedule({.schedule = PipelineSchedule::one_f_one_b, .ranks = 2, .micro_batches = 3});
  EXPECT_EQ(schedule_table(schedule, simulate(schedule, StepCosts{})),
            "time   0  1  2  3  4  5  6  7  8  9  10\n"
            "rank 0 F0 F1 .  B0 W0 F2 B1 W1 .  B2 W2\n"
            "rank 1 .  F0 B0 W0 F1 B1 W1 F2 B2 W2 . \n");
}

TEST(PipelineScheduleTable, DualPipeMarksTheUpwardDirectionAndSpansOverlappedPairs) {
  Schedule schedule = build_schedule({.schedule = PipelineSchedule::dualpipe, .ranks = 2, .micro_batches = 4});
  EXPECT_EQ(schedule_table(schedule, simulate(schedule, StepCosts{})),
            "time   0      1      2      3      4      5      6      7      8      9      10     11    \n"
            "rank 0 F0     F2'    F1     B2'    W2'    F3'&B0 -      -      B3'    W3'    B1     W1    \n"
            "rank 1 F2'    F0     F3'    B0     W0     F1&B2' -      -      B1     W1     B3'    W3'   \n");
}

TEST(PipelineScheduleTable, FractionalCostsAreRefused) {
  Schedule schedule = build_schedule({.schedule = PipelineSchedule::one_f_one_b, .ranks = 2, .micro_batches = 2});
  EXPECT_THROW(schedule_table(schedule, simulate(schedule, StepCosts{.forward = 0.5})), Error);
}

TEST(PipelineScheduleReport, DualPipeVReportsBubbleAndActivationsAgainstTheFormulas) {
  std::string report =
      schedule_report({.schedule = PipelineSchedule::dualpipev, .ranks = 2, .micro_batches = 4}, StepCosts{});
  EXPECT_NE(report.find("schedule dualpipev: pp 2, 4 micro-batches, 4 model stages"), std::string::npos) << report;
  EXPECT_NE(report.find("rank  busy  bubble  bubble%  peak activations\n"
                        "0     24    2       7.7      5\n"
                        "1     24    2       7.7      5\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("makespan 26; largest bubble 2 (7.7%), reference (PP/2-1)(F&B+B-3W) = 2 with PP = 4 stages"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("largest peak activations 5 (micro-batch activations of one stage), reference PP+1 = 5"),
            std::string::npos)
      << report;
}

TEST(PipelineScheduleReport, AShapeAgainstTheRulesIsRefused) {
  EXPECT_THROW(schedule_report({.schedule = PipelineSchedule::dualpipe, .ranks = 4, .micro_batches = 6}, StepCosts{}),
               Error);
}

TEST(PipelineScheduleReport, ShapeOfAConfig) {
  ParallelConfig parallel;
  parallel.pp = 4;
  parallel.schedule = PipelineSchedule::dualpipe;
  parallel.micro_batches = IntOrAuto(8);
  PipelineShape shape = pipeline_shape(parallel);
  EXPECT_EQ(shape.schedule, PipelineSchedule::dualpipe);
  EXPECT_EQ(shape.ranks, 4);
  EXPECT_EQ(shape.micro_batches, 8);
  parallel.micro_batches.reset();
  EXPECT_THROW(pipeline_shape(parallel), Error);
}

}  // namespace
}  // namespace hai
