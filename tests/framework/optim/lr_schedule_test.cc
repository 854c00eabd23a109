#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "framework/core/error.h"
#include "framework/optim/lr_schedule.h"

namespace hai {
namespace {

OptimizerConfig optimizer(LrSchedule schedule, int64_t warmup_steps) {
  OptimizerConfig config;
  config.lr = 1e-3;
  config.min_lr = 1e-4;
  config.warmup_steps = warmup_steps;
  config.schedule = schedule;
  config.deepseek_v3.final_lr = 3e-5;
  return config;
}

TEST(LearningRate, LinearWarmUpFromZero) {
  for (LrSchedule schedule : {LrSchedule::cosine, LrSchedule::constant, LrSchedule::deepseek_v3}) {
    OptimizerConfig config = optimizer(schedule, 10);
    EXPECT_DOUBLE_EQ(learning_rate(config, 1000, 1), 1e-4);
    EXPECT_DOUBLE_EQ(learning_rate(config, 1000, 4), 4e-4);
    EXPECT_EQ(learning_rate(config, 1000, 10), 1e-3);
  }
}

TEST(LearningRate, CosineReachesMinLrAtTheLastStep) {
  OptimizerConfig config = optimizer(LrSchedule::cosine, 10);
  EXPECT_DOUBLE_EQ(learning_rate(config, 110, 60), 5.5e-4);  // half-way: the mean of lr and min_lr
  EXPECT_DOUBLE_EQ(learning_rate(config, 110, 35), 1e-4 + 9e-4 * (1 + std::cos(std::numbers::pi / 4)) / 2);
  EXPECT_EQ(learning_rate(config, 110, 110), 1e-4);
  EXPECT_LT(learning_rate(config, 110, 11), 1e-3);
  EXPECT_GT(learning_rate(config, 110, 11), 0.999e-3);
  // Without warm-up the decay starts at step 1 (p = 0 before it).
  OptimizerConfig no_warmup = optimizer(LrSchedule::cosine, 0);
  EXPECT_DOUBLE_EQ(learning_rate(no_warmup, 100, 50), 5.5e-4);
  EXPECT_EQ(learning_rate(no_warmup, 100, 100), 1e-4);
}

TEST(LearningRate, ConstantAfterWarmUp) {
  OptimizerConfig config = optimizer(LrSchedule::constant, 10);
  EXPECT_EQ(learning_rate(config, 100, 11), 1e-3);
  EXPECT_EQ(learning_rate(config, 100, 100), 1e-3);
}

TEST(LearningRate, DeepseekV3StagesAtTheirBoundaries) {
  // 1000 steps with the default fractions: constant to 676, cosine to 966, min_lr to 989, final_lr after.
  OptimizerConfig config = optimizer(LrSchedule::deepseek_v3, 10);
  EXPECT_EQ(learning_rate(config, 1000, 11), 1e-3);
  EXPECT_EQ(learning_rate(config, 1000, 676), 1e-3);
  EXPECT_LT(learning_rate(config, 1000, 677), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate(config, 1000, 821), 5.5e-4);  // half-way through the decay
  EXPECT_EQ(learning_rate(config, 1000, 966), 1e-4);
  EXPECT_EQ(learning_rate(config, 1000, 967), 1e-4);
  EXPECT_EQ(learning_rate(config, 1000, 989), 1e-4);
  EXPECT_EQ(learning_rate(config, 1000, 990), 3e-5);
  EXPECT_EQ(learning_rate(config, 1000, 1000), 3e-5);
}

TEST(LearningRate, DeepseekV3WithoutADecayStage) {
  OptimizerConfig config = optimizer(LrSchedule::deepseek_v3, 0);
  config.deepseek_v3 = {0.5, 0.5, 0.75, 3e-5};
  EXPECT_EQ(learning_rate(config, 100, 50), 1e-3);
  EXPECT_EQ(learning_rate(config, 100, 51), 1e-4);
  EXPECT_EQ(learning_rate(config, 100, 75), 1e-4);
  EXPECT_EQ(learning_rate(config, 100, 76), 3e-5);
}

TEST(LearningRate, StepsCountFromOneToTheLast) {
  OptimizerConfig config = optimizer(LrSchedule::cosine, 10);
  EXPECT_THROW(learning_rate(config, 100, 0), Error);
  EXPECT_THROW(learning_rate(config, 100, 101), Error);
}

}  // namespace
}  // namespace hai
