#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "framework/core/error.h"
#include "framework/metrics/mfu.h"
#include "framework/metrics/progress.h"

namespace hai {
namespace {

TEST(FormatDuration, HoursMinutesSeconds) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(44.6), "45s");
  EXPECT_EQ(format_duration(123), "2m03s");
  EXPECT_EQ(format_duration(3723), "1h02m03s");
  EXPECT_EQ(format_duration(3600), "1h00m00s");
  EXPECT_EQ(format_duration(27 * 3600), "27h00m00s");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::quiet_NaN()), "?");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(FormatProgress, AllFieldsOnOneLine) {
  ProgressLine line{120, 1000, 3.45123, 2.2e-4, 0.8124, 12345, 0.41234, 253.14, 12.4, 3723};
  EXPECT_EQ(format_progress(line),
            "step 120/1000 | loss 3.4512 | lr 2.20e-04 | grad norm 0.812 | 12.3k tok/s | MFU 41.2% | "
            "253.1 ms/step | mem 12.40 GiB | ETA 1h02m03s");
  line.tokens_per_s = 950;
  line.eta_s = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(format_progress(line),
            "step 120/1000 | loss 3.4512 | lr 2.20e-04 | grad norm 0.812 | 950 tok/s | MFU 41.2% | "
            "253.1 ms/step | mem 12.40 GiB | ETA ?");
  line.tokens_per_s = 4.5e6;
  EXPECT_NE(format_progress(line).find("| 4.50M tok/s |"), std::string::npos);
  line.mfu = std::numeric_limits<double>::quiet_NaN();  // not known: the CPU
  EXPECT_NE(format_progress(line).find("| MFU n/a |"), std::string::npos);
}

TEST(StepTimeAverage, SmoothsAndEstimatesTheRemainingTime) {
  StepTimeAverage average(0.5);
  EXPECT_TRUE(std::isnan(average.step_ms()));
  EXPECT_TRUE(std::isnan(average.eta_s(10)));
  average.add(200);  // the first step sets the average
  EXPECT_EQ(average.step_ms(), 200);
  average.add(400);
  EXPECT_EQ(average.step_ms(), 300);
  average.add(100);
  EXPECT_EQ(average.step_ms(), 200);
  EXPECT_EQ(average.eta_s(50), 10);
  EXPECT_THROW(StepTimeAverage(0.0), Error);
}

TEST(StepClock, StepsTileTheRunExceptWhatARestartLeavesOut) {
  std::chrono::steady_clock::time_point now{};
  StepClock clock([&] { return now; });
  now += std::chrono::milliseconds(5);  // before the first step: left out by the restart
  clock.restart();
  now += std::chrono::milliseconds(120);
  EXPECT_EQ(clock.lap_ms(), 120);
  now += std::chrono::milliseconds(130);  // work after the first lap (the logging read's wait) counts in the next
  EXPECT_EQ(clock.lap_ms(), 130);
  now += std::chrono::milliseconds(900);  // a checkpoint
  clock.restart();
  now += std::chrono::milliseconds(125);
  EXPECT_EQ(clock.lap_ms(), 125);
}

TEST(Mfu, AchievedOverPeak) {
  // 1e6 tok/s x 6e11 FLOP/token = 6e17 FLOP/s over 8 x 989e12 FLOP/s.
  EXPECT_DOUBLE_EQ(mfu(1e6, 6e11, 989, 8), 6e17 / (8 * 989e12));
  EXPECT_DOUBLE_EQ(mfu(2000, 5e11, 1000, 1), 1.0);
  EXPECT_THROW(mfu(1, 1, 0, 1), Error);
  EXPECT_THROW(mfu(1, 1, 989, 0), Error);
}

}  // namespace
}  // namespace hai
