// Evaluation that cannot hang (docs/reliability.md "Evaluation"): data.eval_path is checked at start-up and used by
// every data source; --eval-only needs no training data position; evaluation is bounded and says how many windows
// it scored.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/apps/command.h"
#include "tests/apps/faults/dataset_files.h"
#include "tests/apps/faults/fault_tools.h"

namespace hai {
namespace {

using testing::hai_train_command;
using testing::ProcessResult;
using testing::run_shell;
using testing::TempDirectory;

// The tiny config's windows are 16 + 1 tokens: 10 documents of 40 tokens give (400 - 1) / 16 = 24 windows.
constexpr int kEvalWindows = 24;

TEST(EvalFaultTest, EvalOnlyOfASyntheticRunScoresTheEvalPathAndEnds) {
  TempDirectory dir;
  testing::write_token_dataset(dir.file("eval"), 10, 40, 257);
  ASSERT_EQ(run_shell(hai_train_command(dir.path(), {"train.steps=2"}), dir.path()).exit_code, 0);
  ProcessResult result = run_shell(
      "timeout -s KILL 60 " + hai_train_command(dir.path(), {"data.eval_path=" + dir.file("eval")}, "--eval-only"),
      dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json line = nlohmann::json::parse(testing::last_line(result.out));
  EXPECT_EQ(line["windows"], kEvalWindows);
  EXPECT_GT(line["tokens"].get<int64_t>(), 0);
}

TEST(EvalFaultTest, AMissingEvalPathFailsAtStartUpNamingTheKey) {
  TempDirectory dir;
  ProcessResult result = run_shell(
      hai_train_command(dir.path(), {"train.steps=2", "data.eval_path=" + dir.file("missing")}), dir.path());
  EXPECT_EQ(result.exit_code, 3) << result.err;  // kExitInputError
  EXPECT_NE(result.err.find("data.eval_path: cannot open " + dir.file("missing")), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "run" / "metrics.jsonl"));  // before the first step
}

TEST(EvalFaultTest, AnEvalPathTooShortForOneWindowFailsAtStartUp) {
  TempDirectory dir;
  testing::write_token_dataset(dir.file("short"), 1, 8, 257);
  ProcessResult result = run_shell(
      hai_train_command(dir.path(), {"train.steps=2", "data.eval_path=" + dir.file("short")}), dir.path());
  EXPECT_EQ(result.exit_code, 3) << result.err;  // kExitInputError
  EXPECT_NE(result.err.find("data.eval_path"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("too few"), std::string::npos) << result.err;
}

// The checkpoint's data position is of a dataset the eval-only run does not read (here: another one).
TEST(EvalFaultTest, EvalOnlyNeedsNoTrainingDataPosition) {
  TempDirectory dir;
  testing::write_token_dataset(dir.file("train"), 40, 40, 257);
  testing::write_token_dataset(dir.file("other"), 13, 40, 257);
  testing::write_token_dataset(dir.file("eval"), 10, 40, 257);
  std::vector<std::string> indexed = {"data.source=indexed", "train.steps=3"};
  indexed.push_back("data.path=" + dir.file("train"));
  ASSERT_EQ(run_shell(hai_train_command(dir.path(), indexed), dir.path()).exit_code, 0);
  indexed.back() = "data.path=" + dir.file("other");
  indexed.push_back("data.eval_path=" + dir.file("eval"));
  ProcessResult result = run_shell(hai_train_command(dir.path(), indexed, "--eval-only"), dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json line = nlohmann::json::parse(testing::last_line(result.out));
  EXPECT_EQ(line["step"], 3);
  EXPECT_EQ(line["windows"], kEvalWindows);
}

TEST(EvalFaultTest, PeriodicEvaluationSaysHowManyWindowsItScored) {
  TempDirectory dir;
  ProcessResult result =
      run_shell(hai_train_command(dir.path(), {"train.steps=2", "train.eval_interval=2"}), dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("over 4 windows"), std::string::npos) << result.err;  // eval_batches 2 x 2 windows
}

}  // namespace
}  // namespace hai
