// Dynamic loss scaling in precision.mode fp16 (docs/architecture.md "Precision"). An initial scale of 2^40 pushes the
// output gradients past fp16's range (65504), so the first step's gradients hold inf: the step is skipped, parameters
// and AdamW moments keep their bytes, and the scale halves. Clean steps double the scale after each window.
// NOTE: the model is the tiny one without MoE layers (all dense, no MTP block): the routed experts' grouped GEMM
// takes no fp16 inputs yet.

#include <gtest/gtest.h>

#include <cmath>

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

// The tiny config in fp16 without MoE layers, with these further overrides.
Config fp16_config(const std::filesystem::path& dir, std::vector<std::string> overrides) {
  for (const char* fp16 : {"precision.mode=fp16", "model.first_dense_layers=2", "model.mtp_depth=0"}) {
    overrides.push_back(fp16);
  }
  return tiny_config(dir, overrides);
}

bool all_zero(const Tensor& moments) {
  for (int64_t i = 0; i < moments.numel(); ++i) {
    if (moments.data<float>()[i] != 0.0f) return false;
  }
  return true;
}

TEST(TrainerLossScaleTest, AnOverflowingGradientSkipsTheStepAndHalvesTheScale) {
  TempDirectory dir;
  Trainer trainer(fp16_config(dir.path(), {"precision.loss_scale.init=1099511627776",
                                           "precision.loss_scale.window=1000", "train.steps=1"}));
  OwnedTensor before(trainer.parameters().values().shape(), DType::f32);  // [N]
  copy_tensor(before, trainer.parameters().values());
  trainer.train();

  expect_same_bytes(before, trainer.parameters().values(), "parameters after the skipped step");
  ASSERT_FALSE(trainer.optimizer().partitions().empty());
  for (const Zero1Partition& partition : trainer.optimizer().partitions()) {
    EXPECT_TRUE(all_zero(partition.exp_avg())) << "AdamW's first moment moved";
    EXPECT_TRUE(all_zero(partition.exp_avg_sq())) << "AdamW's second moment moved";
  }
  EXPECT_EQ(trainer.loss_scale(), std::ldexp(1.0, 39));
  MetricsFile metrics = read_metrics(dir.path() / "run");
  ASSERT_EQ(metrics.steps.size(), 1u);
  EXPECT_EQ(metrics.steps[0]["skipped"], true);
  EXPECT_EQ(metrics.steps[0]["loss_scale"], std::ldexp(1.0, 40));
  EXPECT_TRUE(metrics.steps[0]["grad_norm"].is_null());
  EXPECT_TRUE(std::isfinite(metrics.steps[0]["loss"].get<double>()));  // the loss itself is not scaled
}

TEST(TrainerLossScaleTest, CleanStepsDoubleTheScaleAfterEachWindow) {
  TempDirectory dir;
  Trainer trainer(fp16_config(dir.path(), {"precision.loss_scale.init=4", "precision.loss_scale.window=2",
                                           "train.steps=5"}));
  trainer.train();
  MetricsFile metrics = read_metrics(dir.path() / "run");
  ASSERT_EQ(metrics.steps.size(), 5u);
  const double expected[] = {4, 4, 8, 8, 16};
  for (size_t step = 0; step < 5; ++step) {
    EXPECT_EQ(metrics.steps[step]["skipped"], false) << step;
    EXPECT_EQ(metrics.steps[step]["loss_scale"], expected[step]) << step;
  }
  EXPECT_EQ(trainer.loss_scale(), 16.0);
}

TEST(TrainerLossScaleTest, ResumingKeepsTheScaleAndItsCleanSteps) {
  // Uninterrupted: scales 4, 4, 8, 8, 16. Interrupted after step 3 (scale 8, one clean step since it doubled):
  // the resumed steps 4 and 5 must log 8 and 16, not restart at 4.
  TempDirectory dir;
  std::vector<std::string> overrides = {"precision.loss_scale.init=4", "precision.loss_scale.window=2"};
  {
    std::vector<std::string> first = overrides;
    first.push_back("train.steps=3");
    Trainer(fp16_config(dir.path(), first)).train();
  }
  std::vector<std::string> second = overrides;
  second.push_back("train.steps=5");
  Trainer resumed(fp16_config(dir.path(), second));
  ASSERT_EQ(resumed.resume(), 3);
  EXPECT_EQ(resumed.loss_scale(), 8.0);
  resumed.train();
  MetricsFile metrics = read_metrics(dir.path() / "run");
  ASSERT_GE(metrics.steps.size(), 2u);
  EXPECT_EQ(metrics.steps[metrics.steps.size() - 2]["loss_scale"], 8.0);
  EXPECT_EQ(metrics.steps.back()["loss_scale"], 16.0);
  EXPECT_EQ(resumed.loss_scale(), 16.0);
}

}  // namespace
}  // namespace hai
