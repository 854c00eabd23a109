// The collective watchdog end to end: a job of two ranks (collective_hang.cc) in which rank 1 sleeps 60 s before
// the third collective while rank 0 waits in it. With a 1 s timeout the job ends non-zero long before the sleep
// would, and the log names the waiting rank, the operation and its sequence number. With a timeout longer than
// the sleep it ends cleanly.

#include <gtest/gtest.h>

#include "tests/framework/comm/watchdog/hang_job.h"

namespace hai {
namespace {

TEST(CollectiveWatchdog, AHungCollectiveAbortsEveryRankNamingRankOperationAndSequence) {
  testing::TempDirectory dir;
  testing::HangJobResult job = testing::run_hang_job(HAI_COLLECTIVE_HANG_BINARY, dir, "1000", "60");
  EXPECT_NE(job.exit_code, 0) << job.stderr_text;
  EXPECT_LT(job.seconds, 30.0) << "the job waited for the sleeping rank";
  EXPECT_NE(job.stderr_text.find("collective timeout: rank 0 waited 1s in all_reduce #3"), std::string::npos)
      << job.stderr_text;
}

TEST(CollectiveWatchdog, CollectivesWithinTheTimeoutFinish) {
  testing::TempDirectory dir;
  testing::HangJobResult job = testing::run_hang_job(HAI_COLLECTIVE_HANG_BINARY, dir, "20000", "1");
  EXPECT_EQ(job.exit_code, 0) << job.stderr_text;
  EXPECT_EQ(job.stderr_text.find("collective timeout"), std::string::npos) << job.stderr_text;
}

}  // namespace
}  // namespace hai
