// precision.mode fp8 on the CPU backend: the tiny model trains with FP8 GEMMs in every attention and MLP linear
// layer (emulated bit-exactly), and its losses stay close to the same run in bf16.

#include <gtest/gtest.h>

#include <cmath>

#include "apps/hai-train/trainer.h"
#include "tests/apps/metrics_file.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

using testing::MetricsFile;
using testing::read_metrics;
using testing::TempDirectory;
using testing::tiny_config;

constexpr size_t kSteps = 8;

MetricsFile train(const TempDirectory& dir, const std::string& mode) {
  Trainer trainer(tiny_config(dir.path(), {"precision.mode=" + mode, "train.steps=" + std::to_string(kSteps)}));
  trainer.train();
  return read_metrics(dir.path() / "run");
}

TEST(TrainerFp8Test, TrainsWithLossesCloseToBf16) {
  TempDirectory fp8_dir, bf16_dir;
  MetricsFile fp8 = train(fp8_dir, "fp8");
  MetricsFile bf16 = train(bf16_dir, "bf16");
  ASSERT_EQ(fp8.steps.size(), kSteps);
  ASSERT_EQ(bf16.steps.size(), kSteps);
  for (size_t step = 0; step < kSteps; ++step) {
    double fp8_loss = fp8.steps[step]["loss"].get<double>(), bf16_loss = bf16.steps[step]["loss"].get<double>();
    EXPECT_EQ(fp8.steps[step]["skipped"], false) << step;
    EXPECT_LT(std::fabs(fp8_loss - bf16_loss), 0.01 * bf16_loss) << "step " << step + 1;
    EXPECT_NE(fp8_loss, bf16_loss) << "step " << step + 1 << ": fp8 changed nothing";
  }
  EXPECT_LT(fp8.steps.back()["lm_loss"].get<double>(), fp8.steps.front()["lm_loss"].get<double>());
}

}  // namespace
}  // namespace hai
