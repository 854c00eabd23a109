// check_supported: the list of features that do not exist yet is empty: every layout, device and precision that
// validates is accepted.

#include <gtest/gtest.h>

#include "framework/config/config_enums.h"
#include "framework/config/supported.h"
#include "framework/config/validate.h"

namespace hai {
namespace {

TEST(CheckSupported, AcceptsTheCpuFoundation) {
  Config config = resolve_auto(Config{}, 1);
  EXPECT_NO_THROW(check_supported(config));
  config.precision.mode = PrecisionMode::fp32;
  config.runtime.device = RuntimeDevice::cpu;
  EXPECT_NO_THROW(check_supported(config));
}

TEST(CheckSupported, AcceptsDataParallelism) {
  Config config = resolve_auto(Config{}, 4);
  EXPECT_EQ(config.parallel.dp, 4);
  EXPECT_NO_THROW(check_supported(config));
}

TEST(CheckSupported, AcceptsExpertParallelism) {
  Config config = resolve_auto(Config{}, 4);
  config.parallel.ep = 4;
  EXPECT_NO_THROW(check_supported(config));
}

TEST(CheckSupported, AcceptsTensorParallelismOnCpuRanksAndGpus) {
  Config config = resolve_auto(Config{}, 4);
  config.parallel.tp = 2;
  config.parallel.dp = 2;
  config.runtime.device = RuntimeDevice::cpu;
  EXPECT_NO_THROW(check_supported(config));
  config.runtime.device = RuntimeDevice::cuda;
  EXPECT_NO_THROW(check_supported(config));
}

TEST(CheckSupported, AcceptsSequenceParallelismOnCpuRanksAndGpus) {
  Config config = resolve_auto(Config{}, 2);
  config.parallel.tp = 2;
  config.parallel.sequence_parallel = true;
  config.runtime.device = RuntimeDevice::cpu;
  EXPECT_NO_THROW(check_supported(config));
  config.runtime.device = RuntimeDevice::cuda;
  EXPECT_NO_THROW(check_supported(config));
}

TEST(CheckSupported, AcceptsPipelineParallelismUnderEverySchedule) {
  for (PipelineSchedule schedule :
       {PipelineSchedule::one_f_one_b, PipelineSchedule::dualpipe, PipelineSchedule::dualpipev}) {
    Config config = resolve_auto(Config{}, 4);
    config.parallel.pp = 2;
    config.parallel.dp = 2;
    config.parallel.schedule = schedule;
    EXPECT_NO_THROW(check_supported(config)) << to_string(schedule);
    config.parallel.ep = 2;
    EXPECT_NO_THROW(check_supported(config)) << to_string(schedule) << " with ep 2";
  }
}

TEST(CheckSupported, AcceptsCudaOnOneRankAndOnSeveral) {
  Config config = resolve_auto(Config{}, 1);
  config.runtime.device = RuntimeDevice::cuda;
  EXPECT_NO_THROW(check_supported(config));
  config.parallel.dp = 2;  // one GPU per rank, NCCL between them (apps/hai-train/training_world.h)
  EXPECT_NO_THROW(check_supported(config));
}

TEST(CheckSupported, AcceptsEveryPrecisionMode) {
  Config config = resolve_auto(Config{}, 1);
  for (PrecisionMode mode : {PrecisionMode::fp32, PrecisionMode::bf16, PrecisionMode::fp16, PrecisionMode::fp8}) {
    config.precision.mode = mode;
    EXPECT_NO_THROW(check_supported(config));
  }
}

}  // namespace
}  // namespace hai
