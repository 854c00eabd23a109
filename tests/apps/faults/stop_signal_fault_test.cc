// Graceful stop (docs/reliability.md "Preemption"): a stop signal to one rank of a two-rank job, or SIGUSR1 to
// mpirun, makes every rank finish the step, agree on it, save its checkpoint, log why and exit 5; resuming then
// reproduces the uninterrupted run's losses bit for bit (the CPU backend is deterministic). A second signal aborts
// at once.

#include <gtest/gtest.h>

#include <signal.h>

#include <string>
#include <vector>

#include "framework/checkpoint/resolve_checkpoint.h"
#include "framework/core/stop_signal.h"
#include "tests/apps/faults/background_job.h"
#include "tests/apps/metrics_file.h"

namespace hai {
namespace {

using testing::BackgroundJob;
using testing::hai_train_command;
using testing::mpirun;
using testing::read_metrics;
using testing::run_shell;
using testing::TempDirectory;

constexpr int kSteps = 60;
const std::vector<std::string> kOverrides = {"train.steps=60", "checkpoint.interval=0", "logging.interval=1000"};

std::vector<double> losses(const std::filesystem::path& run_dir) {
  std::vector<double> values;
  for (const auto& record : read_metrics(run_dir).steps) values.push_back(record["loss"].get<double>());
  return values;
}

// The uninterrupted run's losses on `ranks` ranks.
std::vector<double> uninterrupted_losses(int ranks) {
  TempDirectory dir;
  std::string launcher = ranks > 1 ? mpirun(ranks) : "";
  testing::ProcessResult result = run_shell(launcher + hai_train_command(dir.path(), kOverrides), dir.path());
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return losses(dir.path() / "run");
}

// The step `latest` names in dir/checkpoints (0 when none).
int64_t latest_step(const std::filesystem::path& dir) {
  std::optional<std::string> latest = latest_checkpoint((dir / "checkpoints").string());
  return latest ? std::stoll(latest->substr(latest->size() - 8)) : 0;
}

// Starts the job, signals `target(job)` with `signal` after step 5, checks the stop (exit status `expected_status`
// of the launcher, a checkpoint at the step it stopped after, the log line), resumes, and compares the losses.
template <typename Target>
void stop_and_resume(int ranks, int signal, Target target) {
  std::vector<double> reference = uninterrupted_losses(ranks);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kSteps));
  TempDirectory dir;
  std::string launcher = ranks > 1 ? mpirun(ranks) : "";
  std::string command = launcher + hai_train_command(dir.path(), kOverrides);
  int stopped_after = 0;
  {
    BackgroundJob job(command, dir.path());
    job.wait_for_steps(5, dir.path() / "run");
    pid_t pid = target(job);
    ASSERT_GT(pid, 0) << "no process to signal";
    ASSERT_EQ(::kill(pid, signal), 0);
    int status = job.wait();
    std::string err = job.err();
    EXPECT_NE(status, 0) << err;
    stopped_after = static_cast<int>(latest_step(dir.path()));
    ASSERT_GE(stopped_after, 5) << err;
    ASSERT_LT(stopped_after, kSteps) << "the run ended before the signal: make the test's run longer\n" << err;
    std::string line = "stopped by " + signal_name(signal) + " after step " + std::to_string(stopped_after);
    EXPECT_NE(err.find(line), std::string::npos) << err;
    // Nothing beyond the step is lost: the metrics end at the checkpoint's step.
    EXPECT_EQ(losses(dir.path() / "run").size(), static_cast<size_t>(stopped_after));
  }
  testing::ProcessResult resumed = run_shell(command, dir.path());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  std::vector<double> after = losses(dir.path() / "run");
  ASSERT_EQ(after.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) EXPECT_EQ(after[i], reference[i]) << "step " << i + 1;
}

TEST(StopSignalFaultTest, SigtermToOneRankOfTwoStopsBothAfterTheSameStepAndTheResumeIsBitExact) {
  stop_and_resume(2, SIGTERM, [](const BackgroundJob& job) { return job.rank_pid(1); });
}

// Open MPI's mpirun forwards SIGUSR1 to every rank (SIGTERM it does not forward reliably: docs/reliability.md).
TEST(StopSignalFaultTest, SigusrOneToMpirunIsForwardedAndStopsEveryRank) {
  stop_and_resume(2, SIGUSR1, [](const BackgroundJob& job) { return job.pid(); });
}

// kill -9 of one rank of two while they save every step: the resume loses nothing beyond the step being saved.
TEST(StopSignalFaultTest, KillNineOfOneRankMidSaveResumesBitExactly) {
  std::vector<std::string> overrides = kOverrides;
  overrides[1] = "checkpoint.interval=1";
  TempDirectory reference_dir, dir;
  ASSERT_EQ(run_shell(mpirun(2) + hai_train_command(reference_dir.path(), overrides), reference_dir.path()).exit_code,
            0);
  std::string command = mpirun(2) + hai_train_command(dir.path(), overrides);
  {
    BackgroundJob job(command, dir.path());
    job.wait_for_steps(20, dir.path() / "run");
    ASSERT_EQ(::kill(job.rank_pid(1), SIGKILL), 0);
    EXPECT_NE(job.wait(), 0);
  }
  int64_t saved = latest_step(dir.path());
  ASSERT_GE(saved, 19);
  ASSERT_LT(saved, kSteps);
  testing::ProcessResult resumed = run_shell(command, dir.path());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  std::vector<double> expected = losses(reference_dir.path() / "run"), actual = losses(dir.path() / "run");
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(actual[i], expected[i]) << "step " << i + 1;
}

TEST(StopSignalFaultTest, SigintAloneStopsWithExitCodeFive) {
  TempDirectory dir;
  BackgroundJob job(hai_train_command(dir.path(), kOverrides), dir.path());
  job.wait_for_steps(3, dir.path() / "run");
  ASSERT_EQ(::kill(job.pid(), SIGINT), 0);
  EXPECT_EQ(job.wait(), 5) << job.err();
  EXPECT_GE(latest_step(dir.path()), 3);
}

TEST(StopSignalFaultTest, ASecondSignalAbortsAtOnce) {
  TempDirectory dir;
  BackgroundJob job(hai_train_command(dir.path(), kOverrides), dir.path());
  job.wait_for_steps(3, dir.path() / "run");
  // NOTE: two different signals: a second SIGTERM pending beside the first would be delivered once.
  ASSERT_EQ(::kill(job.pid(), SIGUSR1), 0);
  ASSERT_EQ(::kill(job.pid(), SIGTERM), 0);
  int status = job.wait();
  EXPECT_TRUE(status == 128 + SIGTERM || status == 128 + SIGUSR1) << status << "\n" << job.err();
}

TEST(StopSignalFaultTest, UnknownStopSignalsAreConfigErrors) {
  TempDirectory dir;
  testing::ProcessResult result =
      run_shell(hai_train_command(dir.path(), {"runtime.stop_signals=[SIGTERM, SIGKILL]"}), dir.path());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("config error: runtime.stop_signals"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace hai
