// The Trainer's checkpoints on disk: a damaged checkpoint refuses to resume with an error naming the damaged file,
// checkpoint.keep prunes old step directories while `latest` names the newest, and checkpoint.save false writes none.

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "apps/hai-train/trainer.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

using testing::read_bytes;
using testing::TempDirectory;
using testing::tiny_config;
using testing::write_bytes;

// Trains the tiny config for 10 steps with its checkpoint at the end; returns the config.
Config train_ten_steps(const TempDirectory& dir) {
  Config config = tiny_config(dir.path(), {"train.steps=10"});
  Trainer trainer(config);
  trainer.resume();
  trainer.train();
  return config;
}

// The message of the hai::Error that resuming `config` throws ("" and a test failure when it resumes).
std::string resume_error(const Config& config) {
  try {
    Trainer(config).resume();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "resumed from a damaged checkpoint";
  return "";
}

TEST(TrainerCheckpointTest, AFlippedByteInTheModelFileFailsTheResumeNamingTheFile) {
  TempDirectory dir;
  Config config = train_ten_steps(dir);
  // NOTE: the last byte of a safetensors file is tensor data (the header comes first), so only the CRC32C of
  // the tensor that holds it can notice.
  std::string model_file = dir.file("checkpoints/step_00000010/model-rank00000.safetensors");
  std::vector<char> bytes = read_bytes(model_file);
  bytes.back() ^= 0x01;
  write_bytes(model_file, bytes);

  std::string error = resume_error(config);
  EXPECT_NE(error.find(model_file), std::string::npos) << error;
  EXPECT_NE(error.find("corrupt"), std::string::npos) << error;
}

TEST(TrainerCheckpointTest, AMissingOptimizerFileFailsTheResumeNamingTheFile) {
  TempDirectory dir;
  Config config = train_ten_steps(dir);
  std::string optim_file = dir.file("checkpoints/step_00000010/optim-rank00000.safetensors");
  std::filesystem::remove(optim_file);

  std::string error = resume_error(config);
  EXPECT_NE(error.find(optim_file), std::string::npos) << error;
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
}

TEST(TrainerCheckpointTest, KeepTwoLeavesTheLastTwoStepDirectoriesAndLatestNamesTheLast) {
  TempDirectory dir;
  Trainer trainer(tiny_config(dir.path(), {"train.steps=20", "checkpoint.interval=5", "checkpoint.keep=2"}));
  trainer.resume();
  trainer.train();

  std::set<std::string> entries;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() / "checkpoints")) {
    entries.insert(entry.path().filename().string());
  }
  EXPECT_EQ(entries, (std::set<std::string>{"latest", "step_00000015", "step_00000020"}));
  std::vector<char> latest = read_bytes(dir.file("checkpoints/latest"));
  EXPECT_EQ(std::string(latest.begin(), latest.end()), "step_00000020\n");
}

TEST(TrainerCheckpointTest, SaveFalseWritesNoCheckpointAtTheIntervalsOrTheEnd) {
  TempDirectory dir;
  Trainer trainer(tiny_config(dir.path(), {"train.steps=4", "checkpoint.interval=2", "checkpoint.save=false"}));
  trainer.resume();
  trainer.train();
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "checkpoints"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "run" / "metrics.jsonl"));
}

}  // namespace
}  // namespace hai
