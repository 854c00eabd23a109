// Trainer::profile and hai-train --profile-steps (framework/metrics/step_profiler.h): the phases tile the step
// (their sum is the step's time), every expected phase is marked as often as the tiny model's layers, micro-batches
// and ZeRO-1 partitions say, the memory points are there, and profiling does not change the training.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/hai-train/trainer.h"
#include "tests/apps/command.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

using testing::last_line;
using testing::run_hai_train;
using testing::TempDirectory;
using testing::tiny_config;
using testing::write_tiny_config;

// The tiny config: 1 dense + 1 MoE layer (with a shared expert), MTP depth 1, 2 micro-batches per step.
constexpr double kMicroBatches = 2;

std::map<std::string, double> calls_per_step(const nlohmann::ordered_json& report) {
  std::map<std::string, double> calls;
  for (const auto& phase : report["phases"]) calls[phase["phase"].get<std::string>()] = phase["calls"].get<double>();
  return calls;
}

TEST(TrainerProfileTest, ThePhasesCoverTheStepAndEachIsMarkedPerLayerAndMicroBatch) {
  TempDirectory dir;
  Trainer trainer(tiny_config(dir.path(), {"train.steps=10"}));
  nlohmann::ordered_json report = trainer.profile(/*warmup_steps=*/1, /*profiled_steps=*/3);
  EXPECT_EQ(trainer.step(), 4);
  EXPECT_EQ(report["steps"].get<int64_t>(), 3);
  EXPECT_EQ(report["device"].get<std::string>(), "cpu");

  // The phases tile the step: their sum is the host-timed step but for the marks at its two ends.
  double step_ms = report["step_ms"].get<double>(), phases_ms = report["phases_ms"].get<double>();
  EXPECT_GT(phases_ms, 0.0);
  EXPECT_LE(phases_ms, step_ms);
  EXPECT_GE(phases_ms, 0.9 * step_ms);
  double phase_sum = 0, share_sum = 0, kind_sum = 0;
  for (const auto& phase : report["phases"]) {
    EXPECT_GE(phase["ms"].get<double>(), 0.0) << phase.dump();
    phase_sum += phase["ms"].get<double>();
    share_sum += phase["share"].get<double>();
  }
  for (const auto& kind : report["kinds"]) kind_sum += kind["ms"].get<double>();
  EXPECT_NEAR(phase_sum, phases_ms, 1e-9 * phases_ms);
  EXPECT_NEAR(kind_sum, phases_ms, 1e-9 * phases_ms);
  EXPECT_NEAR(share_sum, 1.0, 1e-12);

  // ZeRO-1 partitions by gradient bucket: dense ones of the parameters read in fp32 for the embedding, layers 0, 1
  // and 2 (the MTP block) and the head (its norm), then of the others for layers 0, 1 and 2 and the head; expert
  // ones for layers 1 and 2.
  const double partitions = static_cast<double>(trainer.optimizer().partitions().size());
  EXPECT_EQ(partitions, 11);
  const double per_micro_batch = kMicroBatches, per_layer = 2 * kMicroBatches;
  std::map<std::string, double> expected = {
      {"step.zero_grads", 1},
      {"step.data_loading", 1},
      {"forward.inputs_upload", per_micro_batch},
      {"forward.update_wait", 5 * per_micro_batch},  // the embedding's, 2 layers', the head's, 1 MTP module's
      {"forward.embedding", per_micro_batch},
      {"forward.attention", per_layer},
      {"forward.dense_mlp", per_micro_batch},
      {"forward.moe_routing", per_micro_batch},
      {"forward.moe_experts", per_micro_batch},
      {"forward.shared_expert", per_micro_batch},
      {"forward.head_loss", per_micro_batch},
      {"forward.mtp", per_micro_batch},
      {"backward_input.mtp", per_micro_batch},
      {"backward_input.head_loss", per_micro_batch},
      {"backward_input.moe_experts", per_micro_batch},
      {"backward_input.shared_expert", per_micro_batch},
      {"backward_input.moe_routing", per_micro_batch},
      {"backward_input.dense_mlp", per_micro_batch},
      {"backward_input.attention", per_layer},
      {"backward_weight.mtp", per_micro_batch},
      {"backward_weight.attention", per_layer},
      {"backward_weight.dense_mlp", per_micro_batch},
      {"backward_weight.moe_routing", per_micro_batch},
      {"backward_weight.shared_expert", per_micro_batch},
      {"backward_weight.moe_experts", per_micro_batch},
      {"backward_weight.embedding", per_micro_batch},
      {"step.read_back", 1},
      {"step.expert_load_all_reduce", 1},
      {"step.gradient_reduce_and_norm", 1},
      {"optimizer.adamw", partitions},
      {"optimizer.parameter_all_gather", partitions},
      {"optimizer.compute_copy_refresh", 1},
      {"step.router_bias_update", 1},
      {"step.ema", 1},
      {"step.metrics_and_logging", 1},
  };
  EXPECT_EQ(calls_per_step(report), expected);

  std::vector<std::string> points, kinds;
  for (const auto& point : report["memory"]["points"]) {
    points.push_back(point["point"].get<std::string>());
    kinds.push_back(point["kind"].get<std::string>());
    EXPECT_EQ(point["live_gib"].get<double>(), 0.0);  // the CPU has no pool
  }
  EXPECT_EQ(points, (std::vector<std::string>{"step_start", "embedding", "layer.0", "layer.1", "head", "mtp.1",
                                              "after_backward"}));
  EXPECT_EQ(kinds, (std::vector<std::string>{"step", "embedding", "dense", "moe", "head", "mtp", "step"}));
  EXPECT_EQ(report["tokens_per_step"].get<int64_t>(), 4 * 16);
}

TEST(TrainerProfileTest, ProfiledStepsTrainExactlyAsUnprofiledOnes) {
  TempDirectory plain_dir, profiled_dir;
  Trainer plain(tiny_config(plain_dir.path(), {"train.steps=3"}));
  plain.train();
  Trainer profiled(tiny_config(profiled_dir.path(), {"train.steps=3"}));
  profiled.profile(/*warmup_steps=*/1, /*profiled_steps=*/2);
  ASSERT_EQ(profiled.step(), 3);
  Tensor a = plain.parameters().values();  // [N] fp32
  Tensor b = profiled.parameters().values();  // [N] fp32
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << "element " << i;
}

TEST(TrainerProfileTest, HaiTrainProfileStepsPrintsTheReportAndWritesItToTheRunDir) {
  TempDirectory dir;
  std::string config = write_tiny_config(dir.path());
  testing::CommandResult result = run_hai_train("--config " + config + " --profile-steps 2", dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::ordered_json printed = nlohmann::ordered_json::parse(last_line(result.out));
  EXPECT_EQ(printed["steps"].get<int64_t>(), 2);
  EXPECT_EQ(printed["warmup_steps"].get<int64_t>(), 2);
  std::vector<char> file = testing::read_bytes((dir.path() / "run" / "step_profile.json").string());
  EXPECT_EQ(nlohmann::ordered_json::parse(std::string(file.begin(), file.end())), printed);
  EXPECT_EQ(run_hai_train("--config " + config + " --profile-steps 0", dir.path()).exit_code, 2);
}

}  // namespace
}  // namespace hai
