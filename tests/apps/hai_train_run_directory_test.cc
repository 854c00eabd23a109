// The run directory keeps every invocation: config.yaml of the latest training, configs/NNNN.yaml of each
// invocation (training, --eval-only), train.log appended; asking to train to a step at or below the checkpoint's
// exits 4 and leaves the record alone; --eval-only never rewrites the training record.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <spdlog/spdlog.h>

#include "apps/hai-train/exit_codes.h"
#include "apps/hai-train/run_log.h"
#include "framework/core/logging.h"
#include "tests/apps/command.h"
#include "tests/apps/metrics_file.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

using testing::CommandResult;
using testing::read_metrics;
using testing::run_hai_train;
using testing::TempDirectory;
using testing::write_tiny_config;

std::string read_file(const std::filesystem::path& path) {
  std::vector<char> bytes = testing::read_bytes(path.string());
  return {bytes.begin(), bytes.end()};
}

size_t count(const std::string& text, const std::string& what) {
  size_t found = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++found;
  return found;
}

CommandResult hai_train(const TempDirectory& dir, const std::string& arguments) {
  return run_hai_train("--config " + write_tiny_config(dir.path()) + " --set checkpoint.interval=2 " + arguments,
                       dir.path());
}

TEST(HaiTrainRunDirectoryTest, EveryInvocationIsKeptAndNothingIsOverwritten) {
  TempDirectory dir;
  std::filesystem::path run = dir.path() / "run";

  CommandResult first = hai_train(dir, "--set train.steps=4");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::string first_config = read_file(run / "config.yaml");
  EXPECT_NE(first_config.find("  steps: 4\n"), std::string::npos);
  EXPECT_NE(first_config.find("# train from the initial weights\n"), std::string::npos) << first_config;
  EXPECT_EQ(read_file(run / "configs/0001.yaml"), first_config);
  std::string metrics = read_file(run / "metrics.jsonl");

  // At the checkpoint's step or below: said, exit 4, and the record untouched.
  for (const char* steps : {"--set train.steps=3", "--set train.steps=4"}) {
    CommandResult refused = hai_train(dir, steps);
    EXPECT_EQ(refused.exit_code, kExitNothingToTrain) << refused.err;
    EXPECT_NE(refused.err.find("nothing to train: the checkpoint"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("is at step 4 and train.steps is"), std::string::npos) << refused.err;
    EXPECT_EQ(read_file(run / "config.yaml"), first_config);
    EXPECT_FALSE(std::filesystem::exists(run / "configs/0002.yaml"));
    EXPECT_EQ(read_file(run / "metrics.jsonl"), metrics);
  }

  // --eval-only (even asking for fewer steps) is recorded in the history only.
  CommandResult evaluation = hai_train(dir, "--eval-only --set train.steps=2");
  ASSERT_EQ(evaluation.exit_code, 0) << evaluation.err;
  EXPECT_EQ(read_file(run / "config.yaml"), first_config);
  EXPECT_EQ(read_file(run / "metrics.jsonl"), metrics);
  std::string evaluated = read_file(run / "configs/0002.yaml");
  EXPECT_NE(evaluated.find("# --eval-only from the checkpoint of step 4\n"), std::string::npos) << evaluated;
  EXPECT_NE(evaluated.find("--eval-only --set train.steps=2"), std::string::npos) << evaluated;

  CommandResult second = hai_train(dir, "--set train.steps=6");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  std::string second_config = read_file(run / "config.yaml");
  EXPECT_NE(second_config.find("  steps: 6\n"), std::string::npos);
  EXPECT_NE(second_config.find("# train from the checkpoint of step 4\n"), std::string::npos) << second_config;
  EXPECT_EQ(read_file(run / "configs/0003.yaml"), second_config);
  EXPECT_EQ(read_metrics(run).steps.size(), 6u);

  // train.log: every invocation appended, the refusals included.
  std::string log = read_file(run / "train.log");
  EXPECT_EQ(count(log, " --config "), 5u) << log;
  EXPECT_EQ(count(log, "nothing to train"), 2u) << log;
  EXPECT_NE(log.find("training steps 1..4 of 4"), std::string::npos) << log;
  EXPECT_NE(log.find("training steps 5..6 of 6"), std::string::npos) << log;
  EXPECT_NE(log.find("step 6/6 | loss "), std::string::npos) << log;
}

// A rank other than 0 adds its warnings and errors to train.log, not its info lines.
TEST(HaiTrainRunDirectoryTest, OtherRanksAddTheirWarningsToTheLog) {
  TempDirectory dir;
  init_logging(3, /*verbose_rank=*/false);
  add_run_log(dir.path().string(), 3);
  spdlog::info("an info line of rank 3");
  spdlog::warn("a warning of rank 3");
  spdlog::error("an error of rank 3");
  init_logging(0, true);  // the test binary's logger again, without the file
  std::string log = read_file(dir.path() / "train.log");
  EXPECT_EQ(log.find("an info line"), std::string::npos) << log;
  EXPECT_NE(log.find("[rank 3] [warning] a warning of rank 3\n"), std::string::npos) << log;
  EXPECT_NE(log.find("[rank 3] [error] an error of rank 3\n"), std::string::npos) << log;
}

}  // namespace
}  // namespace hai
