// A user's mistake outside the config is one line naming the key or argument and the path, with exit code 3,
// without a C++ source location (that goes to train.log's debug lines) or a doubled rank tag.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "apps/hai-train/exit_codes.h"
#include "tests/apps/command.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

using testing::CommandResult;
using testing::run_hai_train;
using testing::TempDirectory;
using testing::write_tiny_config;

CommandResult hai_train(const TempDirectory& dir, const std::string& arguments) {
  return run_hai_train("--config " + write_tiny_config(dir.path()) + " " + arguments, dir.path());
}

// One error line, holding every piece of `expected`, and nothing from the source.
void expect_user_error(const CommandResult& result, const std::vector<std::string>& expected) {
  EXPECT_EQ(result.exit_code, kExitInputError) << result.err;
  for (const std::string& piece : expected) EXPECT_NE(result.err.find(piece), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find(".cc:"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("check failed"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("[rank 0] [rank 0]"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("] [error] [rank"), std::string::npos) << result.err;
  EXPECT_EQ(result.out, "");
}

TEST(HaiTrainUserErrorsTest, MissingDataNamesTheKeyAndThePath) {
  TempDirectory dir;
  CommandResult result = hai_train(dir, "--set data.source=indexed --set data.path=data/none");
  expect_user_error(result, {"[error] data.path: data/none.idx (relative to " + dir.path().string() + "): no such "
                             "file; make the dataset with hai-data"});
}

TEST(HaiTrainUserErrorsTest, UnreadableDataNamesTheKeyAndTheFile) {
  TempDirectory dir;
  testing::write_text(dir.file("junk.idx"), "not an index at all, but long enough for a header.......");
  testing::write_text(dir.file("junk.bin"), "");
  CommandResult result = hai_train(dir, "--set data.source=indexed --set data.path=" + dir.file("junk"));
  expect_user_error(result, {"[error] data.path: " + dir.file("junk.idx") + ": bad magic"});
}

TEST(HaiTrainUserErrorsTest, EvalOnlyWithoutACheckpoint) {
  TempDirectory dir;
  CommandResult result = hai_train(dir, "--eval-only");
  expect_user_error(result, {"[error] --eval-only: no checkpoint to evaluate in checkpoint.dir " +
                             dir.file("checkpoints")});
}

TEST(HaiTrainUserErrorsTest, AMissingCheckpointDirectory) {
  TempDirectory dir;
  CommandResult result = hai_train(dir, "--set checkpoint.resume=old/step_00000010");
  expect_user_error(result, {"[error] checkpoint.resume: old/step_00000010 (relative to " + dir.path().string() +
                             "): no such directory"});
}

// A checkpoint of another model: refused naming checkpoint.resume; where in the source is in train.log.
TEST(HaiTrainUserErrorsTest, ACheckpointOfAnotherModel) {
  TempDirectory dir;
  ASSERT_EQ(hai_train(dir, "--set train.steps=2").exit_code, 0);
  CommandResult result = hai_train(dir, "--set train.steps=4 --set model.dense_ffn_size=32");
  expect_user_error(result, {"[error] checkpoint.resume (auto, checkpoint.dir " + dir.file("checkpoints") + "): "});
  std::vector<char> log = testing::read_bytes(dir.file("run/train.log"));
  EXPECT_NE(std::string(log.begin(), log.end()).find("[debug] the error above was raised at "), std::string::npos);
}

TEST(HaiTrainUserErrorsTest, ARunDirectoryThatCannotBeCreated) {
  TempDirectory dir;
  testing::write_text(dir.file("file"), "");
  CommandResult result = hai_train(dir, "--set logging.run_dir=file/run");
  expect_user_error(result, {"[error] logging.run_dir: cannot create file/run (relative to "});
}

}  // namespace
}  // namespace hai
