// hai-train --schedule-only: builds, validates and simulates the configured pipeline schedule without a model or
// data, prints the rank x time table with the bubble and activation numbers and the layers of each stage, and exits
// 0.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/apps/command.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

using testing::CommandResult;
using testing::run_hai_train;
using testing::TempDirectory;
using testing::write_tiny_config;

// hai-train --schedule-only on the tiny config (written into `dir`) with `overrides` (" --set ...").
CommandResult schedule_only(const TempDirectory& dir, const std::string& overrides) {
  return run_hai_train("--config " + write_tiny_config(dir.path()) + overrides + " --schedule-only", dir.path());
}

// Exit 2 with `message` on stderr.
void expect_config_error(const CommandResult& result, const std::string& message) {
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
}

TEST(HaiTrainScheduleOnlyTest, PrintsTheDualPipeTableAndNumbersWithoutTraining) {
  TempDirectory dir;
  // pp 2 in one process: the layout's own 2 ranks are planned; 8 sequences / micro-batches of 2 = 4 micro-batches.
  CommandResult result =
      schedule_only(dir, " --set parallel.pp=2 --set parallel.schedule=dualpipe --set train.global_batch_size=8");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("schedule dualpipe: pp 2, 4 micro-batches, 2 model stages"), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("rank 0 F0     F2'    F1     B2'    W2'    F3'&B0 -      -      B3'    W3'    B1     W1"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("makespan 12; largest bubble 0 (0.0%), reference (PP/2-1)(F&B+B-3W) = 0"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("largest peak activations 3 (micro-batch activations of one stage), reference PP+1 = 3"),
            std::string::npos)
      << result.out;
  // The cost model splits the 2 layers [1, 1]; under DualPipe both ranks hold a copy of each stage.
  EXPECT_NE(result.out.find("pipeline stages: 2, layers per stage [1, 1] (balanced by the cost model)\n"
                            "stage 0: layers 0..0 with the embedding, on ranks 0 and 1\n"
                            "stage 1: layers 1..1 with the final norm, head and MTP, on ranks 0 and 1\n"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("| 0-1 | pp | send activations |"), std::string::npos) << result.out;  // comm_plan.h
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "run"));  // no run dir: nothing was trained
}

TEST(HaiTrainScheduleOnlyTest, PrintsExplicitLayersPerStage) {
  TempDirectory dir;
  CommandResult result =
      schedule_only(dir, " --set model.num_layers=4 --set parallel.pp=2 --set 'parallel.stage_layers=[1, 3]'");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("pipeline stages: 2, layers per stage [1, 3] (parallel.stage_layers)\n"
                            "stage 0: layers 0..0 with the embedding, on rank 0\n"
                            "stage 1: layers 1..3 with the final norm, head and MTP, on rank 1\n"),
            std::string::npos)
      << result.out;
}

TEST(HaiTrainScheduleOnlyTest, LayersPerStageNotSummingToTheModelIsAConfigError) {
  TempDirectory dir;
  CommandResult result = schedule_only(dir, " --set parallel.pp=2 --set 'parallel.stage_layers=[1, 2]'");
  expect_config_error(result, "config error: parallel.stage_layers: the stages hold 3 layers, model.num_layers is 2");
}

TEST(HaiTrainScheduleOnlyTest, ATooSmallBatchForDualPipeIsAConfigError) {
  TempDirectory dir;
  CommandResult result = schedule_only(dir, " --set parallel.pp=2 --set parallel.schedule=dualpipe");
  expect_config_error(result, "config error: parallel.micro_batches");
}

}  // namespace
}  // namespace hai
