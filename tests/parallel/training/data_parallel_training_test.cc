// hai-train under mpirun with data parallelism (ZeRO-1) reproduces the single-rank run: the tiny fp32 model for
// 10 steps at dp 1, 2 and 4 (the same global batch of 4 sequences: 4, 2 and 1 micro-batches of 1 per rank) gives
// the same per-step losses and gradient norms and the same final parameters, to 1e-5 relative (only the order of
// the gradient sums differs); a checkpoint written at dp 4 resumes at dp 2 and continues with the losses of the
// uninterrupted run. Expert parallelism the same way: ep 2 with dp 2 and ep 4 with dp 4 (the 4 routed experts
// split over the ranks, expert gradients reduced over the expert-DP group) reproduce the single-rank run, and a
// checkpoint written at ep 4 resumes at ep 2. Every rank runs single-threaded (HAI_CPU_THREADS=1).

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "framework/checkpoint/checkpoint_paths.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "tests/apps/metrics_file.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

constexpr double kTolerance = 1e-5;

// The tiny config at 10 steps with micro-batches of one sequence, checkpoints at steps 5 and 10.
const char* kOverrides =
    " --set train.steps=10 --set train.micro_batch_size=1 --set checkpoint.interval=5 --set logging.interval=1";

// Runs hai-train on `ranks` ranks (alone when 1) in `dir`; returns its exit code, with its stderr on failure.
int run_on_ranks(int ranks, const std::filesystem::path& dir, const std::string& arguments) {
  std::string launcher = ranks == 1 ? "" : std::string(HAI_MPIRUN_COMMAND) + " " + std::to_string(ranks) +
                                               " -x HAI_CPU_THREADS ";
  std::string command = "cd " + dir.string() + " && HAI_CPU_THREADS=1 " + launcher + HAI_TRAIN_BINARY + " " +
                        arguments + " >hai-train.out 2>hai-train.err";
  int status = std::system(command.c_str());
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0) {
    std::vector<char> err = testing::read_bytes(dir / "hai-train.err");
    ADD_FAILURE() << ranks << " rank(s) exited with " << code << ":\n" << std::string(err.begin(), err.end());
  }
  return code;
}

// Trains the tiny config for 10 steps on `ranks` ranks with expert parallelism over `ep` of them, in a
// directory of its own under `root`.
std::filesystem::path train(int ranks, const std::filesystem::path& root, int ep = 1) {
  std::filesystem::path dir = root / ("dp" + std::to_string(ranks) + "_ep" + std::to_string(ep));
  std::filesystem::create_directories(dir);
  testing::write_tiny_config(dir);
  run_on_ranks(ranks, dir, std::string("--config tiny.yaml") + kOverrides + " --set parallel.ep=" + std::to_string(ep));
  return dir;
}

void expect_close(double expected, double actual, const std::string& what) {
  EXPECT_LE(std::abs(actual - expected), kTolerance * std::abs(expected)) << what << ": " << actual << " vs "
                                                                          << expected;
}

void expect_same_steps(const std::filesystem::path& expected_run, const std::filesystem::path& actual_run) {
  testing::MetricsFile expected = testing::read_metrics(expected_run), actual = testing::read_metrics(actual_run);
  ASSERT_EQ(expected.steps.size(), 10u);
  ASSERT_EQ(actual.steps.size(), expected.steps.size());
  for (size_t i = 0; i < expected.steps.size(); ++i) {
    EXPECT_EQ(actual.steps[i]["step"], expected.steps[i]["step"]);
    for (const char* key : {"loss", "lm_loss", "mtp_loss", "balance_loss", "grad_norm"}) {
      expect_close(expected.steps[i][key].get<double>(), actual.steps[i][key].get<double>(),
                   "step " + std::to_string(i + 1) + " " + key);
    }
  }
}

// Every tensor of the two checkpoints (fp32) within 1e-5 relative: ||actual - expected|| <= 1e-5 ||expected||
// (L2 over the tensor's elements; an element of a tiny AdamW update may differ by more on its own).
void expect_close_checkpoints(const std::filesystem::path& expected_dir, const std::filesystem::path& actual_dir) {
  CheckpointReader expected(expected_dir.string()), actual(actual_dir.string());
  ASSERT_EQ(actual.tensors().size(), expected.tensors().size());
  for (const TensorRecord& record : expected.tensors()) {
    ASSERT_EQ(record.dtype, DType::f32) << record.name;
    OwnedTensor want(Shape(record.shape), DType::f32), got(Shape(record.shape), DType::f32);
    expected.read(record.name, want);
    actual.read(record.name, got);
    double norm = 0, difference = 0;  // squared
    for (int64_t i = 0; i < want.numel(); ++i) {
      double value = want.tensor().data<float>()[i];
      norm += value * value;
      difference += (value - got.tensor().data<float>()[i]) * (value - got.tensor().data<float>()[i]);
    }
    EXPECT_LE(std::sqrt(difference), kTolerance * std::sqrt(norm)) << record.name;
  }
}

std::filesystem::path checkpoint_of(const std::filesystem::path& dir, int64_t step) {
  return dir / "checkpoints" / step_dir_name(step);
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

}  // namespace
}  // namespace hai
