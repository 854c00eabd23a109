// The atomic commit protocol: unfinished writes are ignored and cleaned, `latest` moves only at commit, old
// checkpoints are pruned only after the new one is complete, and resume paths resolve as documented.

#include <gtest/gtest.h>

#include <filesystem>

#include "framework/checkpoint/checkpoint_commit.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "framework/checkpoint/checkpoint_retention.h"
#include "framework/checkpoint/checkpoint_writer.h"
#include "framework/checkpoint/file_io.h"
#include "framework/checkpoint/resolve_checkpoint.h"
#include "tests/framework/checkpoint/checkpoint_test_util.h"

namespace hai {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::file_text;
using testing::ScratchDir;
using testing::write_bytes;

// One f32 scalar "value" = `value`, for checkpoints told apart by their contents.
class TinyCheckpoint {
 public:
  TinyCheckpoint(const std::string& dir, int64_t step, float value) : writer_(dir, step), step_(step) {
    value_.data<float>()[0] = value;
    writer_.add(CheckpointGroup::model, "value", value_);
  }
  std::string write() const { return writer_.write_rank_files(); }
  std::string commit(const std::string& dir, int64_t keep) const {
    CheckpointState state;
    state.step = step_;
    return commit_checkpoint(dir, state, {write()}, keep);
  }

 private:
  OwnedTensor value_{Shape{1}, DType::f32};
  CheckpointWriter writer_;
  int64_t step_;
};

float stored_value(const std::string& step_dir) {
  OwnedTensor value(Shape{1}, DType::f32);
  CheckpointReader(step_dir).read("value", value);
  return value.data<float>()[0];
}

TEST(CheckpointProtocol, LatestMovesOnlyAtCommitAndUnfinishedWritesAreIgnoredThenCleaned) {
  ScratchDir dir;
  EXPECT_EQ(resolve_checkpoint(dir.str(), "auto"), std::nullopt);
  TinyCheckpoint(dir.str(), 1, 1.0f).commit(dir.str(), 0);
  TinyCheckpoint(dir.str(), 2, 2.0f).write();  // every rank wrote, but the job died before the commit
  EXPECT_TRUE(fs::exists(dir / "step_00000002.tmp/model-rank00000.safetensors"));
  EXPECT_EQ(file_text(dir / "latest"), "step_00000001\n");
  EXPECT_EQ(resolve_checkpoint(dir.str(), "auto"), dir / "step_00000001");
  EXPECT_EQ(list_checkpoint_steps(dir.str()), std::vector<int64_t>{1});

  TinyCheckpoint(dir.str(), 3, 3.0f).commit(dir.str(), 0);
  EXPECT_FALSE(fs::exists(dir / "step_00000002.tmp"));
  EXPECT_EQ(file_text(dir / "latest"), "step_00000003\n");
  EXPECT_EQ(list_checkpoint_steps(dir.str()), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(stored_value(*resolve_checkpoint(dir.str(), "auto")), 3.0f);
}

TEST(CheckpointProtocol, ALaterStepsSaveInProgressIsLeftAlone) {
  ScratchDir dir;
  TinyCheckpoint(dir.str(), 6, 6.0f).write();  // a fast rank already writes the next checkpoint
  TinyCheckpoint(dir.str(), 5, 5.0f).commit(dir.str(), 1);
  EXPECT_TRUE(fs::exists(dir / "step_00000006.tmp/model-rank00000.safetensors"));
}

TEST(CheckpointProtocol, LeftoversOfAnEarlierAttemptAtTheSameStepAreDropped) {
  ScratchDir dir;
  fs::create_directories(dir / "step_00000004.tmp");
  write_bytes(dir / "step_00000004.tmp/optim-rank00007.safetensors", {'j', 'u', 'n', 'k'});
  TinyCheckpoint(dir.str(), 4, 4.0f).commit(dir.str(), 0);
  EXPECT_FALSE(fs::exists(dir / "step_00000004/optim-rank00007.safetensors"));
  EXPECT_EQ(stored_value(dir / "step_00000004"), 4.0f);
}

TEST(CheckpointProtocol, AFailedCommitLeavesLatestAlone) {
  ScratchDir dir;
  TinyCheckpoint(dir.str(), 1, 1.0f).commit(dir.str(), 0);
  TinyCheckpoint second(dir.str(), 2, 2.0f);
  std::string entries = second.write();
  fs::remove(dir / "step_00000002.tmp/optim-rank00000.safetensors");  // a rank's file went missing
  CheckpointState state;
  state.step = 2;
  expect_error([&] { commit_checkpoint(dir.str(), state, {entries}, 0); },
               {"optim-rank00000.safetensors", "missing"});
  EXPECT_EQ(file_text(dir / "latest"), "step_00000001\n");
  EXPECT_FALSE(fs::exists(dir / "step_00000002"));
}

TEST(CheckpointProtocol, KeepPrunesTheOldestCompleteCheckpoints) {
  ScratchDir dir;
  for (int64_t step = 1; step <= 4; ++step) TinyCheckpoint(dir.str(), step, 1.0f).commit(dir.str(), 2);
  EXPECT_EQ(list_checkpoint_steps(dir.str()), (std::vector<int64_t>{3, 4}));
  TinyCheckpoint(dir.str(), 5, 1.0f).commit(dir.str(), 0);  // 0 keeps all
  EXPECT_EQ(list_checkpoint_steps(dir.str()), (std::vector<int64_t>{3, 4, 5}));
  TinyCheckpoint(dir.str(), 6, 1.0f).commit(dir.str(), 1);
  EXPECT_EQ(list_checkpoint_steps(dir.str()), std::vector<int64_t>{6});
}

TEST(CheckpointProtocol, TheNewCheckpointIsNeverPruned) {
  ScratchDir dir;
  for (int64_t step : {10, 20, 30}) TinyCheckpoint(dir.str(), step, 1.0f).commit(dir.str(), 0);
  TinyCheckpoint(dir.str(), 15, 1.0f).commit(dir.str(), 2);  // resumed from an older one, then saved
  EXPECT_EQ(list_checkpoint_steps(dir.str()), (std::vector<int64_t>{15, 30}));
  EXPECT_EQ(file_text(dir / "latest"), "step_00000015\n");
}

TEST(CheckpointProtocol, SavingAStepAgainReplacesIt) {
  ScratchDir dir;
  TinyCheckpoint(dir.str(), 7, 1.0f).commit(dir.str(), 0);
  TinyCheckpoint(dir.str(), 7, 2.0f).commit(dir.str(), 0);
  EXPECT_EQ(stored_value(dir / "step_00000007"), 2.0f);
  EXPECT_EQ(list_directory(dir.str()), (std::vector<std::string>{"latest", "step_00000007"}));  // nothing aside
  EXPECT_EQ(list_checkpoint_steps(dir.str()), std::vector<int64_t>{7});
}

TEST(CheckpointProtocol, ResolvesResumeSettings) {
  ScratchDir dir;
  TinyCheckpoint(dir.str(), 8, 1.0f).commit(dir.str(), 0);
  EXPECT_EQ(resolve_checkpoint(dir.str(), "none"), std::nullopt);
  EXPECT_EQ(resolve_checkpoint(dir.str(), "auto"), dir / "step_00000008");
  EXPECT_EQ(resolve_checkpoint("/elsewhere", dir / "step_00000008"), dir / "step_00000008");
  EXPECT_EQ(resolve_checkpoint("/elsewhere", dir.str()), dir / "step_00000008");
  expect_error([&] { resolve_checkpoint(dir.str(), dir / "nothing"); }, {dir / "nothing", "neither"});
  fs::remove_all(dir / "step_00000008");
  expect_error([&] { resolve_checkpoint(dir.str(), "auto"); }, {dir / "latest", "step_00000008"});
  write_bytes(dir / "latest", {'.', '.', '/', 'x'});
  expect_error([&] { resolve_checkpoint(dir.str(), "auto"); }, {dir / "latest", "not a step directory"});
}

}  // namespace
}  // namespace hai
