// A step whose gradient norm is not finite is skipped (docs/architecture.md "Precision"): the parameters, router biases
// included, keep their bytes, and the step record says skipped. A learning rate of 1e30 makes it happen cleanly:
// step 1's update blows the weights up to ~1e30, so step 2's forward overflows.

#include <gtest/gtest.h>

#include <cstring>

#include "apps/hai-train/trainer.h"
#include "tests/apps/checkpoint_compare.h"
#include "tests/apps/metrics_file.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

using testing::expect_same_bytes;
using testing::MetricsFile;
using testing::read_metrics;
using testing::TempDirectory;
using testing::tiny_config;

TEST(TrainerSkippedStepTest, ANonFiniteGradientSkipsTheUpdateAndIsRecorded) {
  TempDirectory dir;
  std::vector<std::string> overrides = {"optimizer.lr=1.0e30", "optimizer.warmup_steps=0",
                                        "optimizer.schedule=constant", "optimizer.grad_clip=0"};
  overrides.push_back("train.steps=1");
  Trainer(tiny_config(dir.path(), overrides)).train();
  overrides.back() = "train.steps=2";
  Trainer trainer(tiny_config(dir.path(), overrides));
  ASSERT_EQ(trainer.resume(), 1);
  OwnedTensor before(trainer.parameters().values().shape(), DType::f32);  // [N]
  copy_tensor(before, trainer.parameters().values());
  trainer.train();

  expect_same_bytes(before, trainer.parameters().values(), "parameters after the skipped step");
  MetricsFile metrics = read_metrics(dir.path() / "run");
  ASSERT_EQ(metrics.steps.size(), 2u);
  EXPECT_EQ(metrics.steps[0]["skipped"], false);
  EXPECT_EQ(metrics.steps[1]["skipped"], true);
  EXPECT_TRUE(metrics.steps[1]["grad_norm"].is_null());  // non-finite numbers are written as null
}

}  // namespace
}  // namespace hai
