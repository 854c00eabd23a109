#include "framework/optim/loss_scaler.h"

#include <gtest/gtest.h>

#include "framework/core/error.h"

namespace hai {
namespace {

TEST(LossScalerTest, StartsAtTheInitialScale) {
  LossScaler scaler({.init = 65536.0, .window = 2000, .min = 1.0});
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.clean_steps(), 0);
}

TEST(LossScalerTest, DoublesAfterAWindowOfCleanSteps) {
  LossScaler scaler({.init = 8.0, .window = 3, .min = 1.0});
  scaler.update(true);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 8.0);
  EXPECT_EQ(scaler.clean_steps(), 2);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 16.0);
  EXPECT_EQ(scaler.clean_steps(), 0);
  for (int step = 0; step < 3; ++step) scaler.update(true);
  EXPECT_EQ(scaler.scale(), 32.0);
}

TEST(LossScalerTest, ANonFiniteStepHalvesAndRestartsTheWindow) {
  LossScaler scaler({.init = 8.0, .window = 3, .min = 1.0});
  scaler.update(true);
  scaler.update(true);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 4.0);
  EXPECT_EQ(scaler.clean_steps(), 0);
  scaler.update(true);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 4.0);  // two clean steps since the halving: not a window yet
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 8.0);
}

TEST(LossScalerTest, NeverHalvesBelowTheMinimum) {
  LossScaler scaler({.init = 4.0, .window = 100, .min = 1.5});
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 2.0);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 1.5);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 1.5);
}

TEST(LossScalerTest, RefusesANonPositiveSetting) {
  EXPECT_THROW(LossScaler({.init = 0.0, .window = 1, .min = 1.0}), Error);
  EXPECT_THROW(LossScaler({.init = 1.0, .window = 0, .min = 1.0}), Error);
  EXPECT_THROW(LossScaler({.init = 1.0, .window = 1, .min = 0.0}), Error);
}

}  // namespace
}  // namespace hai
