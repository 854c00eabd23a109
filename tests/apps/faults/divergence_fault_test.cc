// Divergence is an error, not a success (docs/reliability.md "Divergence"): weights that become non-finite stop the
// run at the next step boundary, before any later checkpoint; train.max_skipped_steps consecutive non-finite steps
// stop it with a message naming the cause; every checkpoint saved holds finite weights, so retention keeps them.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "apps/hai-train/trainer.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "framework/checkpoint/resolve_checkpoint.h"
#include "framework/device/grad_norm.h"
#include "tests/apps/faults/fault_tools.h"

namespace hai {
namespace {

using testing::TempDirectory;
using testing::tiny_config;

// The message of the hai::Error that training `trainer` throws ("" when it finishes).
std::string train_error(Trainer& trainer) {
  try {
    trainer.train();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

bool checkpoint_is_finite(const std::string& path) {
  CheckpointReader reader(path);
  for (const TensorRecord& record : reader.tensors()) {
    if (record.dtype != DType::f32) continue;
    OwnedTensor values(Shape(record.shape), DType::f32);
    reader.read(record.name, values);
    if (!std::isfinite(grad_norm_squared({values.tensor()}))) return false;
  }
  return true;
}

TEST(DivergenceFaultTest, NonFiniteWeightsStopTheRunBeforeTheyAreSaved) {
  TempDirectory dir;
  std::vector<std::string> overrides = {"train.steps=2", "checkpoint.interval=1"};
  Trainer(tiny_config(dir.path(), overrides)).train();
  overrides[0] = "train.steps=6";
  Trainer trainer(tiny_config(dir.path(), overrides));
  ASSERT_EQ(trainer.resume(), 2);
  // What an update that overflows leaves: one weight inf (found by the skipped step it causes, or by the save).
  trainer.parameters().values().data<float>()[7] = std::numeric_limits<float>::infinity();
  std::string error = train_error(trainer);
  EXPECT_NE(error.find("diverged"), std::string::npos) << error;
  EXPECT_NE(error.find("not finite"), std::string::npos) << error;
  EXPECT_EQ(trainer.step(), 3);  // stopped at the first boundary or save
  std::optional<std::string> latest = latest_checkpoint(dir.file("checkpoints"));
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(std::filesystem::path(*latest).filename(), "step_00000002");  // nothing non-finite was saved
}

// A too-large learning rate: step 1 blows the weights up to ~1e30, every later step's gradients are not finite.
TEST(DivergenceFaultTest, TooManySkippedStepsInARowStopTheRunAndTheCheckpointsStayFinite) {
  TempDirectory dir;
  Config config = tiny_config(dir.path(), {"optimizer.lr=1e30", "optimizer.warmup_steps=0",
                                           "optimizer.schedule=constant", "optimizer.grad_clip=0", "train.steps=30",
                                           "checkpoint.interval=3", "checkpoint.keep=1", "train.max_skipped_steps=5"});
  Trainer trainer(config);
  std::string error = train_error(trainer);
  EXPECT_NE(error.find("diverged"), std::string::npos) << error;
  EXPECT_NE(error.find("train.max_skipped_steps = 5"), std::string::npos) << error;
  EXPECT_EQ(trainer.step(), 6);  // step 1 updated, steps 2..6 skipped
  std::optional<std::string> latest = latest_checkpoint(dir.file("checkpoints"));
  ASSERT_TRUE(latest.has_value());
  EXPECT_TRUE(checkpoint_is_finite(*latest)) << *latest;
}

TEST(DivergenceFaultTest, TheBinaryExitsNonZeroNamingTheCause) {
  TempDirectory dir;
  testing::ProcessResult result = testing::run_shell(
      testing::hai_train_command(dir.path(), {"optimizer.lr=1e30", "optimizer.warmup_steps=0", "optimizer.grad_clip=0",
                                              "optimizer.schedule=constant", "train.steps=100"}),
      dir.path());
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("diverged"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("train.max_skipped_steps = 25"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace hai
