// Resume is bit-exact on the CPU backend (docs/architecture.md "Checkpoints"): a run interrupted after its step-10
// checkpoint and resumed by a new Trainer ends exactly where an uninterrupted run ends: the same per-step metrics
// records and the same bytes in every parameter (router biases included), compute copy, AdamW moment and EMA value.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "apps/hai-train/trainer.h"
#include "tests/apps/checkpoint_compare.h"
#include "tests/apps/metrics_file.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

using testing::expect_same_bytes;
using testing::expect_same_checkpoint;
using testing::MetricsFile;
using testing::read_metrics;
using testing::TempDirectory;
using testing::tiny_config;

std::unique_ptr<Trainer> train_to_end(const Config& config) {
  auto trainer = std::make_unique<Trainer>(config);
  trainer->resume();
  trainer->train();
  return trainer;
}

std::unique_ptr<Trainer> resume_and_train(const Config& config, int64_t expected_step) {
  auto trainer = std::make_unique<Trainer>(config);
  EXPECT_EQ(trainer->resume(), expected_step);
  trainer->train();
  return trainer;
}

std::vector<nlohmann::ordered_json> records_from(std::vector<nlohmann::ordered_json> records, int64_t first_step) {
  std::erase_if(records, [&](const auto& record) { return record["step"].template get<int64_t>() < first_step; });
  return records;
}

// Every record of `actual` equals the record of `expected` for the same step (timings aside), and `actual` has
// the eval and expert-load records `expected` has from its first step on.
void expect_same_records(const MetricsFile& expected, const MetricsFile& actual) {
  const std::vector<std::string> deterministic_keys = {"step",     "tokens", "loss",      "lm_loss",    "mtp_loss",
                                                       "balance_loss", "lr", "grad_norm", "loss_scale", "skipped"};
  std::map<int64_t, nlohmann::ordered_json> expected_steps;
  for (const auto& record : expected.steps) expected_steps[record["step"].get<int64_t>()] = record;
  ASSERT_FALSE(actual.steps.empty());
  for (const auto& record : actual.steps) {
    int64_t step = record["step"].get<int64_t>();
    ASSERT_TRUE(expected_steps.contains(step)) << "step " << step;
    for (const std::string& key : deterministic_keys) {
      EXPECT_EQ(record[key], expected_steps[step][key]) << "step " << step << ": " << key;
    }
  }
  int64_t first_step = actual.steps.front()["step"].get<int64_t>();
  EXPECT_EQ(actual.evals, records_from(expected.evals, first_step));
  EXPECT_EQ(actual.expert_loads, records_from(expected.expert_loads, first_step));
}

void expect_same_parameters(const ParameterStore& expected, const ParameterStore& actual) {
  expect_same_bytes(expected.values(), actual.values(), "master values");
  ASSERT_EQ(actual.parameters().size(), expected.parameters().size());
  for (size_t i = 0; i < expected.parameters().size(); ++i) {
    const Parameter& parameter = expected.parameters()[i];
    expect_same_bytes(parameter.compute, actual.parameters()[i].compute, parameter.spec.name + " (compute copy)");
  }
}

std::string final_checkpoint(const TempDirectory& dir) { return dir.file("checkpoints/step_00000020"); }

// Overrides of the tiny config: 20 steps, a checkpoint every 10, evaluation every 5, and the variant's own.
std::vector<std::string> resume_overrides(std::vector<std::string> variant) {
  variant.insert(variant.end(), {"train.steps=20", "checkpoint.interval=10", "train.eval_interval=5"});
  return variant;
}

// A variant of the tiny config: its name and overrides.
struct Variant {
  std::string name;
  std::vector<std::string> overrides;
};

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

std::vector<Variant> variants() {
  return {{"Fp32", {}},
          {"Fp32WithEma", {"ema.enabled=true", "ema.decay=0.9"}},
          {"Bf16WithBf16MomentsAndEma",
           {"precision.mode=bf16", "optimizer.moment_dtype=bf16", "ema.enabled=true", "ema.decay=0.9"}}};
}

class ResumeTest : public ::testing::TestWithParam<Variant> {};

// The interrupted run really stops after 10 steps (train.steps=10), and the resumed one is told 20. Under the
// constant schedule the learning rate of a step does not depend on train.steps, so both runs must agree.
TEST_P(ResumeTest, AnInterruptedRunResumedByANewTrainerMatchesAnUninterruptedOne) {
  std::vector<std::string> overrides = resume_overrides(GetParam().overrides);
  overrides.push_back("optimizer.schedule=constant");
  TempDirectory whole_dir, split_dir;
  auto whole = train_to_end(tiny_config(whole_dir.path(), overrides));

  std::vector<std::string> first_half = overrides;
  first_half.push_back("train.steps=10");
  train_to_end(tiny_config(split_dir.path(), first_half));
  auto resumed = resume_and_train(tiny_config(split_dir.path(), overrides), 10);

  MetricsFile whole_metrics = read_metrics(whole_dir.path() / "run");
  MetricsFile split_metrics = read_metrics(split_dir.path() / "run");
  ASSERT_EQ(split_metrics.steps.size(), 20u);
  expect_same_records(whole_metrics, split_metrics);
  expect_same_parameters(whole->parameters(), resumed->parameters());
  expect_same_checkpoint(final_checkpoint(whole_dir), final_checkpoint(split_dir));
}

// Resuming from the step-10 checkpoint of a 20-step cosine run (checkpoint.resume = its path) in another
// directory redoes steps 11..20 exactly.
TEST_P(ResumeTest, ResumingFromAMidRunCheckpointRedoesTheRestExactly) {
  std::vector<std::string> overrides = resume_overrides(GetParam().overrides);
  TempDirectory whole_dir, resumed_dir;
  auto whole = train_to_end(tiny_config(whole_dir.path(), overrides));

  overrides.push_back("checkpoint.resume=" + whole_dir.file("checkpoints/step_00000010"));
  auto resumed = resume_and_train(tiny_config(resumed_dir.path(), overrides), 10);

  MetricsFile resumed_metrics = read_metrics(resumed_dir.path() / "run");
  ASSERT_EQ(resumed_metrics.steps.size(), 10u);
  EXPECT_EQ(resumed_metrics.steps.front()["step"], 11);
  expect_same_records(read_metrics(whole_dir.path() / "run"), resumed_metrics);
  expect_same_parameters(whole->parameters(), resumed->parameters());
  expect_same_checkpoint(final_checkpoint(whole_dir), final_checkpoint(resumed_dir));
}

INSTANTIATE_TEST_SUITE_P(Precisions, ResumeTest, ::testing::ValuesIn(variants()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace hai
