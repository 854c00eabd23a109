// The Trainer's metrics.jsonl (docs/architecture.md "Outputs"): step records with exactly the contract keys, evaluation
// records at train.eval_interval and at the end, expert-load records with per-layer min/max/cv at
// logging.interval; and on learnable data the loss falls.

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "apps/hai-train/trainer.h"
#include "framework/data/indexed_dataset_writer.h"
#include "tests/apps/metrics_file.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

using testing::MetricsFile;
using testing::read_metrics;
using testing::TempDirectory;
using testing::tiny_config;

MetricsFile train_and_read_metrics(const Config& config) {
  Trainer trainer(config);
  trainer.resume();
  trainer.train();
  return read_metrics(config.logging.run_dir);
}

std::vector<std::string> keys_of(const nlohmann::ordered_json& record) {
  std::vector<std::string> keys;
  for (const auto& item : record.items()) keys.push_back(item.key());
  return keys;
}

std::vector<int64_t> steps_of(const std::vector<nlohmann::ordered_json>& records) {
  std::vector<int64_t> steps;
  for (const auto& record : records) steps.push_back(record["step"].get<int64_t>());
  return steps;
}

TEST(TrainerMetricsTest, RecordsHaveTheContractKeysAtTheirIntervals) {
  TempDirectory dir;
  Config config = tiny_config(dir.path(), {"train.steps=10", "train.eval_interval=4"});
  MetricsFile metrics = train_and_read_metrics(config);

  const std::vector<std::string> step_keys = {"step", "tokens", "loss", "lm_loss", "mtp_loss", "balance_loss", "lr",
                                              "grad_norm", "loss_scale", "skipped", "step_ms", "tokens_per_s",
                                              "mfu", "mem_gib"};
  ASSERT_EQ(metrics.steps.size(), 10u);
  for (size_t i = 0; i < metrics.steps.size(); ++i) {
    const auto& record = metrics.steps[i];
    EXPECT_EQ(keys_of(record), step_keys);
    int64_t step = static_cast<int64_t>(i) + 1;
    EXPECT_EQ(record["step"], step);
    EXPECT_EQ(record["tokens"], step * 4 * 16);  // global batch 4 x seq_len 16 per step
    EXPECT_EQ(record["skipped"], false);
    EXPECT_EQ(record["loss_scale"], 1.0);
    EXPECT_GT(record["tokens_per_s"].get<double>(), 0);
    EXPECT_TRUE(record["mfu"].is_null());  // on the CPU: n/a (logging.peak_tflops is a GPU's)
  }

  EXPECT_EQ(steps_of(metrics.evals), (std::vector<int64_t>{4, 8, 10}));  // every 4 steps, and the last
  for (const auto& record : metrics.evals) {
    EXPECT_EQ(keys_of(record), (std::vector<std::string>{"step", "tokens", "eval_loss"}));
    EXPECT_TRUE(std::isfinite(record["eval_loss"].get<double>()));
  }

  EXPECT_EQ(steps_of(metrics.expert_loads), (std::vector<int64_t>{1, 5, 10}));  // the first, every 5, the last
  for (const auto& record : metrics.expert_loads) {
    EXPECT_EQ(keys_of(record), (std::vector<std::string>{"step", "expert_load"}));
    ASSERT_EQ(record["expert_load"].size(), 2u);  // the MoE layer and the MTP module's block
    for (size_t row = 0; row < 2; ++row) {
      const auto& layer = record["expert_load"][row];
      EXPECT_EQ(keys_of(layer), (std::vector<std::string>{"layer", "min", "max", "cv"}));
      EXPECT_EQ(layer["layer"], 1 + row);  // after the one dense layer; the MTP block numbered after the model's
      // 2 micro-batches x 32 tokens x 2 experts each over 4 experts: a mean load of 32.
      EXPECT_LE(layer["min"].get<int64_t>(), 32);
      EXPECT_GE(layer["max"].get<int64_t>(), 32);
      EXPECT_GE(layer["cv"].get<double>(), 0.0);
    }
  }
}

// A repeating cycle of 7 tokens as an indexed dataset at `prefix`: 40 documents of 10 cycles each, so the packed
// stream is one unbroken cycle and windows of 16 tokens start at every phase of it.
void write_cycle_dataset(const std::string& prefix) {
  const std::vector<int32_t> cycle = {3, 141, 59, 26, 53, 58, 97};
  std::vector<int32_t> document;
  for (int repeat = 0; repeat < 10; ++repeat) document.insert(document.end(), cycle.begin(), cycle.end());
  IndexedDatasetWriter writer(prefix, token_dtype_for_vocab(257));
  for (int i = 0; i < 40; ++i) writer.add_document(document);
  writer.finalize();
}

TEST(TrainerMetricsTest, TheLossOfARepeatingPatternFallsFarBelowUniform) {
  TempDirectory dir;
  write_cycle_dataset(dir.file("cycle"));
  Config config = tiny_config(dir.path(), {"data.source=indexed", "data.path=" + dir.file("cycle"),
                                           "data.valid_fraction=0.1", "train.steps=30", "train.eval_interval=30",
                                           "optimizer.lr=1.0e-2", "optimizer.schedule=constant"});
  MetricsFile metrics = train_and_read_metrics(config);

  double uniform = std::log(257.0);
  ASSERT_EQ(metrics.steps.size(), 30u);
  EXPECT_NEAR(metrics.steps.front()["lm_loss"].get<double>(), uniform, 0.05);  // init_std 0.006: near-uniform
  double last_five = 0;
  for (size_t i = 25; i < 30; ++i) last_five += metrics.steps[i]["lm_loss"].get<double>() / 5;
  EXPECT_LT(last_five, 0.5);
  ASSERT_EQ(metrics.evals.size(), 1u);
  EXPECT_LT(metrics.evals[0]["eval_loss"].get<double>(), 0.5);
}

}  // namespace
}  // namespace hai
