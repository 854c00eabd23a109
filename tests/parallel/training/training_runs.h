#pragma once
// The multi-rank hai-train tests' tools: run hai-train on some ranks (under mpirun, single-threaded) in a directory,
// and compare two runs: per-step metrics and checkpoints, to 1e-5 relative.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/checkpoint/checkpoint_paths.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "tests/apps/metrics_file.h"
#include "tests/apps/tiny_config.h"
#include "tests/framework/data/temp_directory.h"

namespace hai::testing {

constexpr double kTrainingTolerance = 1e-5;

// Runs hai-train on `ranks` ranks (alone when 1) in `dir`; returns its exit code, with its stderr on failure.
inline int run_on_ranks(int ranks, const std::filesystem::path& dir, const std::string& arguments) {
  std::string launcher = ranks == 1 ? "" : std::string(HAI_MPIRUN_COMMAND) + " " + std::to_string(ranks) +
                                               " -x HAI_CPU_THREADS ";
  std::string command = "cd " + dir.string() + " && HAI_CPU_THREADS=1 " + launcher + HAI_TRAIN_BINARY + " " +
                        arguments + " >hai-train.out 2>hai-train.err";
  int status = std::system(command.c_str());
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0) {
    std::vector<char> err = read_bytes(dir / "hai-train.err");
    ADD_FAILURE() << ranks << " rank(s) exited with " << code << ":\n" << std::string(err.begin(), err.end());
  }
  return code;
}

// Runs hai-train with `arguments` on `ranks` ranks in `dir`, created with the tiny config (tiny_config.h) in it;
// returns `dir`.
inline std::filesystem::path train_tiny(int ranks, const std::filesystem::path& dir, const std::string& arguments) {
  std::filesystem::create_directories(dir);
  write_tiny_config(dir);
  run_on_ranks(ranks, dir, arguments);
  return dir;
}

// The eval_loss of the JSON line that hai-train --eval-only printed last into <dir>/hai-train.out.
inline double eval_loss_printed(const std::filesystem::path& dir) {
  std::vector<char> out = read_bytes((dir / "hai-train.out").string());
  std::string text(out.begin(), out.end());
  return nlohmann::json::parse(text.substr(text.rfind('{')))["eval_loss"].get<double>();
}

// The eval_loss of hai-train --eval-only (data.valid_fraction 0.25) scoring `checkpoint` with `arguments` on `ranks`
// ranks in `dir` (created with the tiny config); expects the run to succeed.
inline double eval_only_loss(int ranks, const std::filesystem::path& dir, const std::string& arguments,
                             const std::filesystem::path& checkpoint) {
  std::filesystem::create_directories(dir);
  write_tiny_config(dir);
  EXPECT_EQ(run_on_ranks(ranks, dir,
                         arguments + " --eval-only --set data.valid_fraction=0.25 --set checkpoint.resume=" +
                             checkpoint.string()),
            0);
  return eval_loss_printed(dir);
}

inline void expect_close(double expected, double actual, const std::string& what,
                         double tolerance = kTrainingTolerance) {
  EXPECT_LE(std::abs(actual - expected), tolerance * std::abs(expected))
      << what << ": " << actual << " vs " << expected;
}

// The step profile that hai-train --profile-steps wrote into the run directory under `dir`.
inline nlohmann::json read_step_profile(const std::filesystem::path& dir) {
  std::vector<char> file = read_bytes((dir / "run" / "step_profile.json").string());
  return nlohmann::json::parse(std::string(file.begin(), file.end()));
}

// A step profile's calls per step of each phase.
inline std::map<std::string, double> calls_per_step(const nlohmann::json& report) {
  std::map<std::string, double> calls;
  for (const auto& phase : report["phases"]) calls[phase["phase"].get<std::string>()] = phase["calls"].get<double>();
  return calls;
}

// The runs' metrics have `steps` step records with the same losses and gradient norms (to `tolerance` relative).
inline void expect_same_steps(const std::filesystem::path& expected_run, const std::filesystem::path& actual_run,
                              size_t steps = 10, double tolerance = kTrainingTolerance) {
  MetricsFile expected = read_metrics(expected_run), actual = read_metrics(actual_run);
  ASSERT_EQ(expected.steps.size(), steps);
  ASSERT_EQ(actual.steps.size(), expected.steps.size());
  for (size_t i = 0; i < expected.steps.size(); ++i) {
    EXPECT_EQ(actual.steps[i]["step"], expected.steps[i]["step"]);
    for (const char* key : {"loss", "lm_loss", "mtp_loss", "balance_loss", "grad_norm"}) {
      expect_close(expected.steps[i][key].get<double>(), actual.steps[i][key].get<double>(),
                   "step " + std::to_string(i + 1) + " " + key, tolerance);
    }
  }
}

// Every tensor of the two checkpoints (fp32) within `tolerance` relative: ||actual - expected|| <= tolerance x
// ||expected|| (L2 over the tensor's elements; an element of a tiny AdamW update may differ by more on its own).
inline void expect_close_checkpoints(const std::filesystem::path& expected_dir, const std::filesystem::path& actual_dir,
                                     double tolerance = kTrainingTolerance) {
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
    EXPECT_LE(std::sqrt(difference), tolerance * std::sqrt(norm)) << record.name;
  }
}

inline std::filesystem::path checkpoint_of(const std::filesystem::path& dir, int64_t step) {
  return dir / "checkpoints" / step_dir_name(step);
}

// Copies the run in `trained` to `dir` and resumes its step-5 checkpoint there on `ranks` ranks with `arguments`
// (a layout's, of 10 steps), writing into <dir>/resumed_checkpoints: the resumed run continues with the losses of
// `single_rank`'s run and ends at its step-10 checkpoint (to `checkpoint_tolerance`).
inline void expect_resumed_run_matches(const std::filesystem::path& trained, const std::filesystem::path& dir,
                                       int ranks, const std::string& arguments,
                                       const std::filesystem::path& single_rank, double checkpoint_tolerance) {
  std::filesystem::copy(trained, dir, std::filesystem::copy_options::recursive);
  std::filesystem::path checkpoints = dir / "resumed_checkpoints";
  ASSERT_EQ(run_on_ranks(ranks, dir,
                         arguments + " --set checkpoint.resume=" + checkpoint_of(dir, 5).string() +
                             " --set checkpoint.dir=" + checkpoints.string()),
            0);
  expect_same_steps(single_rank / "run", dir / "run");
  expect_close_checkpoints(checkpoint_of(single_rank, 10), checkpoints / step_dir_name(10), checkpoint_tolerance);
}

}  // namespace hai::testing
