// hai-train under mpirun with tensor parallelism reproduces the single-rank run: the tiny fp32 model (4 layers, 4
// heads, the byte tokenizer's vocabulary of 257 that no tp divides) for 10 steps in micro-batches of one sequence
// gives the same per-step losses and gradient norms (1e-5 relative; measured 5e-9 at step 1, 2e-8 over ten steps, the
// norms 2e-6) and the same checkpoint at step 10 (values and AdamW moments in the global layout, 1e-4 relative as the
// other layouts' tests, see pipeline_parallel_training_test.cc) as one rank: tp 2, tp 4, tp 2 x dp 2 x ep 2 (a global
// batch of 8) and tp 2 x pp 2 under DualPipe. A tp 2 checkpoint passes hai-ckpt inspect --verify, exports the
// tensors one rank's checkpoint exports (export-hf in bf16, 1e-3), and resumes at tp 1 and at tp 4 with the losses of the
// uninterrupted run; --eval-only at tp 2 and 4 scores a checkpoint as one rank does. Sequence parallelism
// (parallel.sequence_parallel) the same way: tp 2 + SP, tp 4 + SP, tp 2 + SP x dp 2 x ep 2 and tp 2 + SP x pp 2
// DualPipe against one rank (measured: step 1 the bits of tp alone, 5.3e-9 at tp 2 and 1.65e-8 at tp 4, ten steps
// within the same), a tp 2 + SP checkpoint resumed at tp 1, --eval-only at tp 2 + SP, and bf16 with selective
// recomputation against tp 2. Every rank runs single-threaded.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "framework/checkpoint/safetensors_reader.h"
#include "tests/parallel/training/training_runs.h"

namespace hai {
namespace {

using testing::checkpoint_of;
using testing::expect_close_checkpoints;
using testing::expect_same_steps;

// NOTE: 1e-4 for the checkpoints: AdamW's first steps move an element by about lr whatever its gradient's size.
constexpr double kCheckpointTolerance = 1e-4;

const char* kOverrides =
    " --set model.num_layers=4 --set model.num_heads=4 --set train.steps=10 --set train.micro_batch_size=1"
    " --set checkpoint.interval=5 --set logging.interval=1";

struct Layout {
  int ranks = 1;
  int tp = 1;
  int pp = 1;
  int ep = 1;
  std::string schedule = "1f1b";
  int global_batch = 4;
  bool sequence_parallel = false;

  std::string name() const {
    return "np" + std::to_string(ranks) + "_tp" + std::to_string(tp) + (sequence_parallel ? "_sp" : "") + "_pp" +
           std::to_string(pp) + "_ep" + std::to_string(ep) + "_" + schedule + "_batch" + std::to_string(global_batch);
  }
  std::string arguments() const {
    return std::string("--config tiny.yaml") + kOverrides + " --set parallel.tp=" + std::to_string(tp) +
           " --set parallel.pp=" + std::to_string(pp) + " --set parallel.ep=" + std::to_string(ep) +
           " --set parallel.schedule=" + schedule + " --set train.global_batch_size=" + std::to_string(global_batch) +
           (sequence_parallel ? " --set parallel.sequence_parallel=true" : "");
  }
};

std::filesystem::path train(const Layout& layout, const std::filesystem::path& root) {
  return testing::train_tiny(layout.ranks, root / layout.name(), layout.arguments());
}

// The values of a bf16 or fp32 safetensors entry as doubles.
std::vector<double> values_of(const SafetensorsFile& file, const SafetensorsEntry& entry) {
  std::vector<std::byte> bytes(entry.bytes());
  file.read(entry, bytes);
  std::vector<double> values;
  if (entry.dtype == DType::bf16) {
    for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
      uint32_t bits = (static_cast<uint32_t>(bytes[i + 1]) << 24) | (static_cast<uint32_t>(bytes[i]) << 16);
      values.push_back(std::bit_cast<float>(bits));
    }
    return values;
  }
  EXPECT_EQ(entry.dtype, DType::f32) << entry.name;
  for (size_t i = 0; i + 3 < bytes.size(); i += 4) {
    float value;
    std::memcpy(&value, bytes.data() + i, sizeof(value));
    values.push_back(value);
  }
  return values;
}

// The HF exports (hai-ckpt export-hf) of two checkpoints: the same config.json, the same tensors by name, shape and
// dtype, values within `tolerance` relative (L2 over each tensor).
void expect_same_export(const std::filesystem::path& expected_dir, const std::filesystem::path& actual_dir,
                        double tolerance) {
  EXPECT_EQ(testing::read_bytes((expected_dir / "config.json").string()),
            testing::read_bytes((actual_dir / "config.json").string()));
  const std::string weights = "model-00001-of-00001.safetensors";
  SafetensorsFile expected((expected_dir / weights).string()), actual((actual_dir / weights).string());
  ASSERT_EQ(actual.tensors().size(), expected.tensors().size());
  for (const SafetensorsEntry& want : expected.tensors()) {
    const SafetensorsEntry* got = actual.find(want.name);
    ASSERT_NE(got, nullptr) << want.name;
    ASSERT_EQ(got->shape, want.shape) << want.name;
    ASSERT_EQ(got->dtype, want.dtype) << want.name;
    std::vector<double> a = values_of(expected, want), b = values_of(actual, *got);
    double norm = 0, difference = 0;  // squared
    for (size_t i = 0; i < a.size(); ++i) {
      norm += a[i] * a[i];
      difference += (b[i] - a[i]) * (b[i] - a[i]);
    }
    EXPECT_LE(std::sqrt(difference), tolerance * std::sqrt(norm)) << want.name;
  }
}

class TensorParallelTraining : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new testing::TempDirectory();
    single_rank_ = train(Layout{}, root_->path());
  }
  static void TearDownTestSuite() { delete root_; }

  static std::filesystem::path expect_single_rank_run(const Layout& layout, const std::filesystem::path& single_rank) {
    std::filesystem::path dir = train(layout, root_->path());
    expect_same_steps(single_rank / "run", dir / "run");
    expect_close_checkpoints(checkpoint_of(single_rank, 10), checkpoint_of(dir, 10), kCheckpointTolerance);
    return dir;
  }

  // The single-rank run of a global batch of 8, trained once for the tests that need it.
  static const std::filesystem::path& single_rank_of_batch_8() {
    static const std::filesystem::path dir = train({.global_batch = 8}, root_->path());
    return dir;
  }

  inline static testing::TempDirectory* root_ = nullptr;
  inline static std::filesystem::path single_rank_;
};

TEST_F(TensorParallelTraining, TwoRanksMatchOneRank) { expect_single_rank_run({.ranks = 2, .tp = 2}, single_rank_); }

TEST_F(TensorParallelTraining, FourRanksMatchOneRank) { expect_single_rank_run({.ranks = 4, .tp = 4}, single_rank_); }

TEST_F(TensorParallelTraining, TwoTensorTimesTwoDataTimesTwoExpertParallelMatchOneRank) {
  expect_single_rank_run({.ranks = 4, .tp = 2, .ep = 2, .global_batch = 8}, single_rank_of_batch_8());
}

TEST_F(TensorParallelTraining, TwoTensorTimesTwoDualPipeStagesMatchOneRank) {
  expect_single_rank_run({.ranks = 4, .tp = 2, .pp = 2, .schedule = "dualpipe"}, single_rank_);
}

// Sequence parallelism: the tp ranks split each micro-batch's tokens outside the tensor-parallel regions.
TEST_F(TensorParallelTraining, TwoRanksWithSequenceParallelismMatchOneRank) {
  expect_single_rank_run({.ranks = 2, .tp = 2, .sequence_parallel = true}, single_rank_);
}

TEST_F(TensorParallelTraining, FourRanksWithSequenceParallelismMatchOneRank) {
  expect_single_rank_run({.ranks = 4, .tp = 4, .sequence_parallel = true}, single_rank_);
}

TEST_F(TensorParallelTraining, SequenceParallelTwoTensorTimesTwoDataTimesTwoExpertParallelMatchOneRank) {
  expect_single_rank_run({.ranks = 4, .tp = 2, .ep = 2, .global_batch = 8, .sequence_parallel = true},
                         single_rank_of_batch_8());
}

TEST_F(TensorParallelTraining, SequenceParallelTwoTensorTimesTwoDualPipeStagesMatchOneRank) {
  expect_single_rank_run({.ranks = 4, .tp = 2, .pp = 2, .schedule = "dualpipe", .sequence_parallel = true},
                         single_rank_);
}

// In bf16 under selective recomputation (the MoE's bf16 expert rows, the shared expert reading them, the layers
// remaking their inputs) tp 2 + SP gives tp 2's losses for four steps.
TEST_F(TensorParallelTraining, SequenceParallelInBf16WithRecomputationMatchesTensorParallelism) {
  const std::string bf16 = " --set precision.mode=bf16 --set train.recompute=selective --set train.steps=4";
  std::filesystem::path tp = root_->path() / "bf16_tp2", sp = root_->path() / "bf16_tp2_sp";
  testing::train_tiny(2, tp, Layout{.ranks = 2, .tp = 2}.arguments() + bf16);
  testing::train_tiny(2, sp, Layout{.ranks = 2, .tp = 2, .sequence_parallel = true}.arguments() + bf16);
  expect_same_steps(tp / "run", sp / "run", 4);
}

// A tp 2 + sequence-parallel checkpoint is in the global layout too: it resumes at tp 1 with the single-rank losses.
TEST_F(TensorParallelTraining, SequenceParallelCheckpointResumesAtOneRank) {
  std::filesystem::path trained = train({.ranks = 2, .tp = 2, .sequence_parallel = true}, root_->path() / "sp_reshard");
  testing::expect_resumed_run_matches(trained, root_->path() / "sp_reshard" / "to_one_rank", 1, Layout{}.arguments(),
                                      single_rank_, kCheckpointTolerance);
}

// The checkpoint holds the global layout (each tp rank writes its boxes): it verifies, exports, and resumes at tp 1
// and tp 4, each continuing with the single-rank losses to the single-rank checkpoint.
TEST_F(TensorParallelTraining, CheckpointOfTwoRanksResumesAtOneAndFour) {
  std::filesystem::path trained = train({.ranks = 2, .tp = 2}, root_->path() / "reshard");
  for (const std::string& command : {"inspect --verify " + checkpoint_of(trained, 10).string(),
                                     "export-hf " + checkpoint_of(trained, 10).string() + " " +
                                         (trained / "hf").string(),
                                     "export-hf " + checkpoint_of(single_rank_, 10).string() + " " +
                                         (trained / "hf_of_one_rank").string()}) {
    std::string line = std::string(HAI_CKPT_BINARY) + " " + command + " >" + (trained / "ckpt.out").string() + " 2>&1";
    EXPECT_EQ(std::system(line.c_str()), 0) << command;
  }
  // NOTE: the export is bf16 (the HF checkpoints' dtype): a value 1e-5 apart may round to the next bf16 (4e-3).
  expect_same_export(trained / "hf_of_one_rank", trained / "hf", 1e-3);
  for (const Layout& resumed : {Layout{}, Layout{.ranks = 4, .tp = 4}}) {
    SCOPED_TRACE(resumed.name());
    testing::expect_resumed_run_matches(trained, root_->path() / "reshard" / ("to_" + resumed.name()), resumed.ranks,
                                        resumed.arguments(), single_rank_, kCheckpointTolerance);
  }
}

// Evaluation at tp 2, tp 4 and tp 2 + SP (the vocabulary-parallel loss without its gradient) scores the single-rank run's
// checkpoint as one rank does.
TEST_F(TensorParallelTraining, EvalOnlyOfTensorParallelRanksMatchesOneRank) {
  auto eval_loss = [&](const Layout& layout) {
    return testing::eval_only_loss(layout.ranks, root_->path() / ("eval_" + layout.name()), layout.arguments(),
                                   checkpoint_of(single_rank_, 10));
  };
  double one_rank = eval_loss(Layout{});
  EXPECT_GT(one_rank, 0.0);
  for (const Layout& layout :
       {Layout{.ranks = 2, .tp = 2}, Layout{.ranks = 4, .tp = 4}, Layout{.ranks = 2, .tp = 2, .sequence_parallel = true}}) {
    EXPECT_NEAR(eval_loss(layout), one_rank, 1e-6 * one_rank) << layout.name();
  }
}

// hai-train --profile-steps at tp 2: the TP all-reduces are a phase kind of their own (tp_collective, in each pass
// they interrupt), so their share of the step is measured (scripts/bench.sh --multi-gpu reports it). Under sequence
// parallelism the all-gathers and reduce-scatters along the tokens are charged there too: each MLA block alone
// moves four times (three gathers and a reduce-scatter for tp's one all-reduce), so the forward charges more
// collectives than at tp 2 alone.
TEST_F(TensorParallelTraining, ProfileOfTensorParallelRanksTimesTheCollectives) {
  const Layout tp{.ranks = 2, .tp = 2}, sequence_parallel{.ranks = 2, .tp = 2, .sequence_parallel = true};
  std::map<std::string, double> forward_calls;
  for (const Layout& layout : {tp, sequence_parallel}) {
    SCOPED_TRACE(layout.name());
    std::filesystem::path dir = root_->path() / ("profile_" + layout.name());
    std::filesystem::create_directories(dir);
    testing::write_tiny_config(dir);
    ASSERT_EQ(testing::run_on_ranks(2, dir, layout.arguments() + " --profile-steps 2"), 0);
    nlohmann::json report = testing::read_step_profile(dir);
    std::map<std::string, double> calls = testing::calls_per_step(report);
    EXPECT_GT(calls["forward.tp_collective"], 0);
    EXPECT_GT(calls["backward_input.tp_collective"], 0);
    forward_calls[layout.name()] = calls["forward.tp_collective"];
    double collective_share = -1;
    for (const auto& kind : report["kinds"]) {
      if (kind["kind"] == "tp_collective") collective_share = kind["share"].get<double>();
    }
    EXPECT_GT(collective_share, 0.0);
    EXPECT_LT(collective_share, 1.0);
  }
  EXPECT_GT(forward_calls[sequence_parallel.name()], forward_calls[tp.name()]);
}

}  // namespace
}  // namespace hai
