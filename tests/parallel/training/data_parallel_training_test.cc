// hai-train under mpirun with data parallelism (ZeRO-1) reproduces the single-rank run: the tiny fp32 model for
// 10 steps at dp 1, 2 and 4 (the same global batch of 4 sequences: 4, 2 and 1 micro-batches of 1 per rank) gives
// the same per-step losses and gradient norms and the same final parameters, to 1e-5 relative (only the order of
// the gradient sums differs); a checkpoint written at dp 4 resumes at dp 2 and continues with the losses of the
// uninterrupted run. Expert parallelism the same way: ep 2 with dp 2 and ep 4 with dp 4 (the 4 routed experts
// split over the ranks, expert gradients reduced over the expert-DP group) reproduce the single-rank run, and a
// checkpoint written at ep 4 resumes at ep 2; in fp8, ep 2 matches ep 1 on two ranks and resumes exactly. Every
// rank runs single-threaded (HAI_CPU_THREADS=1).

#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/apps/tiny_config.h"
#include "tests/parallel/training/training_runs.h"

namespace hai {
namespace {

using testing::checkpoint_of;
using testing::expect_close_checkpoints;
using testing::expect_same_steps;
using testing::MetricsFile;
using testing::read_metrics;
using testing::run_on_ranks;

// The tiny config at 10 steps with micro-batches of one sequence, checkpoints at steps 5 and 10.
const char* kOverrides =
    " --set train.steps=10 --set train.micro_batch_size=1 --set checkpoint.interval=5 --set logging.interval=1";

// Trains the tiny config for 10 steps on `ranks` ranks with expert parallelism over `ep` of them, in a
// directory of its own under `root`.
std::filesystem::path train(int ranks, const std::filesystem::path& root, int ep = 1) {
  return testing::train_tiny(ranks, root / ("dp" + std::to_string(ranks) + "_ep" + std::to_string(ep)),
                             std::string("--config tiny.yaml") + kOverrides + " --set parallel.ep=" + std::to_string(ep));
}

class DataParallelTraining : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new testing::TempDirectory();
    single_rank_ = train(1, root_->path());
  }
  static void TearDownTestSuite() { delete root_; }

  inline static testing::TempDirectory* root_ = nullptr;
  inline static std::filesystem::path single_rank_;
};

TEST_F(DataParallelTraining, TwoRanksMatchOneRank) {
  std::filesystem::path dir = train(2, root_->path());
  expect_same_steps(single_rank_ / "run", dir / "run");
  expect_close_checkpoints(checkpoint_of(single_rank_, 10), checkpoint_of(dir, 10));
}

TEST_F(DataParallelTraining, FourRanksMatchOneRank) {
  std::filesystem::path dir = train(4, root_->path());
  expect_same_steps(single_rank_ / "run", dir / "run");
  expect_close_checkpoints(checkpoint_of(single_rank_, 10), checkpoint_of(dir, 10));
}

TEST_F(DataParallelTraining, CheckpointOfFourRanksResumesOnTwo) {
  std::filesystem::path dp4 = train(4, root_->path() / "resume");
  // Two ranks resume the four-rank run's step 5 into checkpoints of their own, appending to its metrics.
  std::filesystem::path dp2_checkpoints = dp4 / "dp2_checkpoints";
  std::string arguments = std::string("--config tiny.yaml") + kOverrides + " --set checkpoint.resume=" +
                          checkpoint_of(dp4, 5).string() + " --set checkpoint.dir=" + dp2_checkpoints.string();
  ASSERT_EQ(run_on_ranks(2, dp4, arguments), 0);
  expect_same_steps(single_rank_ / "run", dp4 / "run");
  expect_close_checkpoints(checkpoint_of(single_rank_, 10), dp2_checkpoints / step_dir_name(10));
}

TEST_F(DataParallelTraining, ExpertParallelTwoRanksMatchOneRank) {
  std::filesystem::path dir = train(2, root_->path(), /*ep=*/2);
  expect_same_steps(single_rank_ / "run", dir / "run");
  expect_close_checkpoints(checkpoint_of(single_rank_, 10), checkpoint_of(dir, 10));
}

TEST_F(DataParallelTraining, ExpertParallelFourRanksMatchOneRankAndResumeOnTwo) {
  std::filesystem::path ep4 = train(4, root_->path(), /*ep=*/4);
  expect_same_steps(single_rank_ / "run", ep4 / "run");
  expect_close_checkpoints(checkpoint_of(single_rank_, 10), checkpoint_of(ep4, 10));
  // Two ranks at ep 2 resume the ep 4 run's step 5 (each rank reads its experts by their global names).
  std::filesystem::path ep2_checkpoints = ep4 / "ep2_checkpoints";
  std::string arguments = std::string("--config tiny.yaml") + kOverrides + " --set parallel.ep=2" +
                          " --set checkpoint.resume=" + checkpoint_of(ep4, 5).string() +
                          " --set checkpoint.dir=" + ep2_checkpoints.string();
  ASSERT_EQ(run_on_ranks(2, ep4, arguments), 0);
  expect_same_steps(single_rank_ / "run", ep4 / "run");
  expect_close_checkpoints(checkpoint_of(single_rank_, 10), ep2_checkpoints / step_dir_name(10));
}

// In bf16 at dp 2 the routed experts' partitions all-gather their bf16 compute copy, not their fp32 values
// (zero1.h), so each rank's fp32 values of the other rank's experts are stale between steps. A checkpoint must
// still hold every value: resumed from step 5 on two ranks, the run repeats the uninterrupted one's steps 6-10
// exactly (the same layout and reduction order).
TEST_F(DataParallelTraining, Bf16CheckpointOfTwoRanksResumesExactly) {
  std::filesystem::path dir = root_->path() / "bf16_dp2";
  std::filesystem::create_directories(dir);
  testing::write_tiny_config(dir);
  const std::string arguments = std::string("--config tiny.yaml") + kOverrides + " --set precision.mode=bf16";
  ASSERT_EQ(run_on_ranks(2, dir, arguments), 0);
  std::filesystem::path resumed = dir / "resumed";
  ASSERT_EQ(run_on_ranks(2, dir,
                         arguments + " --set checkpoint.resume=" + checkpoint_of(dir, 5).string() +
                             " --set checkpoint.dir=" + (resumed / "checkpoints").string() +
                             " --set logging.run_dir=" + (resumed / "run").string()),
            0);
  MetricsFile uninterrupted = read_metrics(dir / "run"), continued = read_metrics(resumed / "run");
  ASSERT_EQ(uninterrupted.steps.size(), 10u);
  ASSERT_EQ(continued.steps.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(continued.steps[i]["step"], uninterrupted.steps[i + 5]["step"]);
    EXPECT_EQ(continued.steps[i]["loss"], uninterrupted.steps[i + 5]["loss"]) << "step " << i + 6;
    EXPECT_EQ(continued.steps[i]["grad_norm"], uninterrupted.steps[i + 5]["grad_norm"]) << "step " << i + 6;
  }
}

// precision.mode fp8: the routed experts compute in FP8 from their weights' FP8 copies, with no bf16 copy (ZeRO-1
// all-gathers their fp32 values and quantises the copies after each step). On two ranks ep 2 gives the steps of
// ep 1 (a routed row is quantised the same way on the rank that routes it and on the rank that owns its expert;
// only the order of the expert gradients' sums differs), and a checkpoint of the ep 2 run at step 5 resumes with
// exactly the uninterrupted run's steps 6-10.
TEST_F(DataParallelTraining, Fp8ExpertParallelMatchesDataParallelAndResumesExactly) {
  const std::string fp8 = std::string("--config tiny.yaml") + kOverrides + " --set precision.mode=fp8";
  std::map<int, std::filesystem::path> runs;
  for (int ep : {1, 2}) {
    runs[ep] = root_->path() / ("fp8_dp2_ep" + std::to_string(ep));
    std::filesystem::create_directories(runs[ep]);
    testing::write_tiny_config(runs[ep]);
    ASSERT_EQ(run_on_ranks(2, runs[ep], fp8 + " --set parallel.ep=" + std::to_string(ep)), 0);
  }
  expect_same_steps(runs[1] / "run", runs[2] / "run");
  // NOTE: a last-bit difference of a weight can move its FP8 copy by an e4m3 step, so the small moments of a few
  // tensors drift by up to ~1e-4 of their norm by step 10 (the values and the steps stay within 1e-5).
  expect_close_checkpoints(checkpoint_of(runs[1], 10), checkpoint_of(runs[2], 10), 1e-3);
  std::filesystem::path resumed = runs[2] / "resumed";
  ASSERT_EQ(run_on_ranks(2, runs[2],
                         fp8 + " --set parallel.ep=2 --set checkpoint.resume=" + checkpoint_of(runs[2], 5).string() +
                             " --set checkpoint.dir=" + (resumed / "checkpoints").string() +
                             " --set logging.run_dir=" + (resumed / "run").string()),
            0);
  MetricsFile uninterrupted = read_metrics(runs[2] / "run"), continued = read_metrics(resumed / "run");
  ASSERT_EQ(uninterrupted.steps.size(), 10u);
  ASSERT_EQ(continued.steps.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(continued.steps[i]["loss"], uninterrupted.steps[i + 5]["loss"]) << "step " << i + 6;
    EXPECT_EQ(continued.steps[i]["grad_norm"], uninterrupted.steps[i + 5]["grad_norm"]) << "step " << i + 6;
  }
}

// parallel.overlap_param_gather (the default) leaves the experts' bf16 all-gathers running into the next forward:
// the same values arrive before each layer reads them (at pp > 1, before the pipeline starts), so the steps are
// bitwise those of gathering in the optimizer step, checkpoints (which wait for every gather) included.
void expect_overlapped_gathers_give_the_same_steps(const std::filesystem::path& root, int ranks,
                                                   const std::string& layout) {
  const std::string arguments = std::string("--config tiny.yaml") + kOverrides + " --set precision.mode=bf16" + layout;
  std::vector<std::filesystem::path> dirs;
  for (const char* overlap : {"false", "true"}) {
    std::filesystem::path dir = root / ("bf16_np" + std::to_string(ranks) + "_overlap_" + overlap);
    std::filesystem::create_directories(dir);
    testing::write_tiny_config(dir);
    ASSERT_EQ(run_on_ranks(ranks, dir, arguments + " --set parallel.overlap_param_gather=" + overlap), 0);
    dirs.push_back(dir);
  }
  MetricsFile joined = read_metrics(dirs[0] / "run"), overlapped = read_metrics(dirs[1] / "run");
  ASSERT_EQ(joined.steps.size(), 10u);
  ASSERT_EQ(overlapped.steps.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(overlapped.steps[i]["loss"], joined.steps[i]["loss"]) << "step " << i + 1;
    EXPECT_EQ(overlapped.steps[i]["grad_norm"], joined.steps[i]["grad_norm"]) << "step " << i + 1;
  }
  expect_close_checkpoints(checkpoint_of(dirs[0], 10), checkpoint_of(dirs[1], 10));
}

TEST_F(DataParallelTraining, OverlappedParameterGathersGiveTheSameSteps) {
  expect_overlapped_gathers_give_the_same_steps(root_->path(), 2, "");
}

TEST_F(DataParallelTraining, OverlappedParameterGathersUnderAPipelineGiveTheSameSteps) {
  expect_overlapped_gathers_give_the_same_steps(root_->path(), 4, " --set parallel.pp=2 --set parallel.schedule=1f1b");
}

// hai-train --profile-steps at ep 2: the expert exchange (dispatch and combine, forward and backward) is a phase
// kind of its own, so the all-to-all's share of the step is measured (docs/performance.md).
TEST_F(DataParallelTraining, ProfileOfExpertParallelRanksTimesTheExchange) {
  std::filesystem::path dir = root_->path() / "profile_ep2";
  std::filesystem::create_directories(dir);
  testing::write_tiny_config(dir);
  std::string arguments = std::string("--config tiny.yaml") + kOverrides + " --set parallel.ep=2 --profile-steps 2";
  ASSERT_EQ(run_on_ranks(2, dir, arguments), 0);
  nlohmann::json report = testing::read_step_profile(dir);
  std::map<std::string, double> calls = testing::calls_per_step(report);
  // A dispatch and a combine each way per MoE layer and micro-batch.
  EXPECT_GT(calls["forward.expert_exchange"], 0);
  EXPECT_EQ(calls["forward.expert_exchange"], calls["backward_input.expert_exchange"]);
  double exchange_share = -1;
  for (const auto& kind : report["kinds"]) {
    if (kind["kind"] == "expert_exchange") exchange_share = kind["share"].get<double>();
  }
  EXPECT_GT(exchange_share, 0.0);
  EXPECT_LT(exchange_share, 1.0);
}

}  // namespace
}  // namespace hai
