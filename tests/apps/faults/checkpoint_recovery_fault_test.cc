// Recovery without a person (docs/reliability.md "Checkpoints"): under checkpoint.resume auto a `latest` that fails
// to load falls back, loudly, to the newest checkpoint that loads; a save that fails (a full disk) removes its .tmp
// directory, leaves `latest` and the previous checkpoint as they were, and stops the run with the reason.

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>

#include "apps/hai-train/trainer.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "framework/checkpoint/resolve_checkpoint.h"
#include "tests/apps/faults/fault_tools.h"

namespace hai {
namespace {

using testing::read_bytes;
using testing::TempDirectory;
using testing::tiny_config;
using testing::write_bytes;

void flip_last_byte(const std::string& path) {
  std::vector<char> bytes = read_bytes(path);
  bytes.back() ^= 0x01;
  write_bytes(path, bytes);
}

TEST(CheckpointRecoveryFaultTest, ACorruptLatestFallsBackToTheNewestCheckpointThatLoads) {
  TempDirectory dir;
  Trainer(tiny_config(dir.path())).train();  // checkpoints at 10 and 20
  flip_last_byte(dir.file("checkpoints/step_00000020/model-rank00000.safetensors"));
  Trainer trainer(tiny_config(dir.path(), {"train.steps=25"}));
  EXPECT_EQ(trainer.resume(), 10);
  EXPECT_EQ(std::filesystem::path(*trainer.resumed_from()).filename(), "step_00000010");
  trainer.train();  // and training goes on from there
  EXPECT_EQ(trainer.step(), 25);
}

TEST(CheckpointRecoveryFaultTest, ALatestNamingAMissingCheckpointFallsBackToo) {
  TempDirectory dir;
  Trainer(tiny_config(dir.path())).train();
  std::filesystem::remove_all(dir.file("checkpoints/step_00000020"));
  EXPECT_EQ(Trainer(tiny_config(dir.path())).resume(), 10);
}

TEST(CheckpointRecoveryFaultTest, AnExplicitCheckpointThatFailsIsAnErrorNotAFallback) {
  TempDirectory dir;
  Trainer(tiny_config(dir.path())).train();
  flip_last_byte(dir.file("checkpoints/step_00000020/model-rank00000.safetensors"));
  Config config = tiny_config(dir.path(), {"checkpoint.resume=" + dir.file("checkpoints/step_00000020")});
  EXPECT_THROW(Trainer(config).resume(), Error);
}

// A full disk: writes beyond a size fail (RLIMIT_FSIZE, with SIGXFSZ ignored, fails them with EFBIG as a full
// disk fails them with ENOSPC), so the second checkpoint cannot be written.
TEST(CheckpointRecoveryFaultTest, AFailedSaveRemovesItsTmpAndLeavesLatestUntouched) {
  TempDirectory dir;
  Trainer(tiny_config(dir.path(), {"train.steps=10"})).train();
  auto model_bytes = std::filesystem::file_size(dir.file("checkpoints/step_00000010/model-rank00000.safetensors"));
  Trainer trainer(tiny_config(dir.path(), {"train.steps=20"}));
  ASSERT_EQ(trainer.resume(), 10);
  rlimit previous{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &previous), 0);
  auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = previous;
  limited.rlim_cur = model_bytes / 2;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::string error;
  try {
    trainer.train();
  } catch (const Error& caught) {
    error = caught.what();
  }
  setrlimit(RLIMIT_FSIZE, &previous);
  std::signal(SIGXFSZ, previous_handler);
  EXPECT_NE(error.find("step 20: the checkpoint could not be saved"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(dir.file("checkpoints/step_00000020.tmp")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("checkpoints/step_00000020")));
  EXPECT_EQ(std::filesystem::path(*latest_checkpoint(dir.file("checkpoints"))).filename(), "step_00000010");
  CheckpointReader(dir.file("checkpoints/step_00000010")).verify_all();  // the previous one is whole
  EXPECT_EQ(Trainer(tiny_config(dir.path(), {"train.steps=20"})).resume(), 10);
}

}  // namespace
}  // namespace hai
