// hai-train --eval-only: scores the checkpoint that checkpoint.resume names and prints one JSON line, the same
// numbers as Trainer::evaluate of that checkpoint; without a checkpoint it fails.

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "apps/hai-train/trainer.h"
#include "tests/apps/command.h"
#include "tests/apps/metrics_file.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

using testing::CommandResult;
using testing::last_line;
using testing::read_metrics;
using testing::run_hai_train;
using testing::TempDirectory;
using testing::tiny_config;
using testing::write_tiny_config;

void train(const Config& config) {
  Trainer trainer(config);
  trainer.resume();
  trainer.train();
}

TEST(HaiTrainEvalOnlyTest, PrintsTheEvaluationOfTheLatestCheckpointAsTrainerEvaluateDoes) {
  TempDirectory dir;
  Config config = tiny_config(dir.path());
  train(config);

  CommandResult result = run_hai_train("--config " + write_tiny_config(dir.path()) + " --eval-only", dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto line = nlohmann::ordered_json::parse(last_line(result.out));
  std::vector<std::string> keys;
  for (const auto& item : line.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"step", "eval_loss", "mtp_loss", "tokens", "windows"}));

  Trainer trainer(config);
  ASSERT_EQ(trainer.resume(), 20);
  EvalResult expected = trainer.evaluate(config.train.eval_batches * config.train.micro_batch_size);
  EXPECT_EQ(line["step"], 20);
  EXPECT_EQ(line["eval_loss"].get<double>(), expected.lm_loss);
  EXPECT_EQ(line["mtp_loss"].get<double>(), expected.mtp_loss);
  EXPECT_EQ(line["windows"], 4);                    // eval_batches 2 x micro_batch_size 2
  EXPECT_EQ(line["tokens"], 4 * config.train.seq_len);  // every target of every window
  EXPECT_EQ(expected.windows, 4);
  EXPECT_EQ(expected.tokens, 4 * config.train.seq_len);
}

// Scoring an earlier checkpoint of a run is read-only: the run's metrics keep every step.
TEST(HaiTrainEvalOnlyTest, EvaluatingAnEarlierCheckpointLeavesTheRunsMetricsAlone) {
  TempDirectory dir;
  train(tiny_config(dir.path()));
  ASSERT_EQ(read_metrics(dir.path() / "run").steps.size(), 20u);

  std::string arguments = "--config " + write_tiny_config(dir.path()) + " --eval-only --set checkpoint.resume=" +
                          dir.file("checkpoints/step_00000010");
  CommandResult result = run_hai_train(arguments, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(nlohmann::json::parse(last_line(result.out))["step"], 10);
  EXPECT_EQ(read_metrics(dir.path() / "run").steps.size(), 20u);
}

TEST(HaiTrainEvalOnlyTest, FailsWithoutACheckpoint) {
  TempDirectory dir;
  CommandResult result = run_hai_train("--config " + write_tiny_config(dir.path()) + " --eval-only", dir.path());
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("--eval-only: no checkpoint to evaluate"), std::string::npos) << result.err;
  EXPECT_EQ(result.out, "");
}

}  // namespace
}  // namespace hai
