// ZeRO-1's sharded fp32 master beside an EMA, on 2 CPU ranks in bf16 (dp 2: every trainable parameter but the
// embedding, the norms and the MoE gates keeps its fp32 master in the ranks' shards, parallel/zero1.h): the EMA
// reads the whole values each step, the checkpoint's values and EMA are those of one rank's run (to the bf16
// run-to-run tolerance of another order of sums), and evaluating with the EMA swapped in leaves the trained
// weights' compute copy bit for bit as it was. One shared directory.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "apps/hai-train/trainer.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "tests/apps/tiny_config_world.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// The model values and the EMA ("ema.<name>") of two checkpoints within `tolerance` relative (L2 over a tensor).
void expect_close_weights(const std::filesystem::path& expected_dir, const std::filesystem::path& actual_dir,
                          double tolerance) {
  CheckpointReader expected(expected_dir.string()), actual(actual_dir.string());
  int compared_ema = 0;
  for (const TensorRecord& record : expected.tensors()) {
    if (record.name.starts_with("optimizer.")) continue;
    compared_ema += record.name.starts_with("ema.") ? 1 : 0;
    OwnedTensor want(Shape(record.shape), DType::f32), got(Shape(record.shape), DType::f32);
    expected.read(record.name, want);
    actual.read(record.name, got);
    double norm = 0, difference = 0;  // squared
    for (int64_t i = 0; i < want.numel(); ++i) {
      double value = want.tensor().data<float>()[i], error = value - got.tensor().data<float>()[i];
      norm += value * value;
      difference += error * error;
    }
    EXPECT_LE(std::sqrt(difference), tolerance * std::sqrt(norm)) << record.name;
  }
  EXPECT_GT(compared_ema, 0);
}

class TrainerShardedMasterWorld : public testing::TinyConfigWorld {
 protected:
  // The tiny bf16 config with an EMA evaluated in place of the weights, run `name` under `dir`, for `ranks`.
  static Config ema_config(const std::filesystem::path& dir, const std::string& name, int ranks) {
    std::vector<std::string> overrides = {
        "precision.mode=bf16", "ema.enabled=true", "ema.decay=0.5", "ema.eval=true", "data.valid_fraction=0.1",
        "train.steps=4", "checkpoint.dir=" + (dir / name / "checkpoints").string(),
        "logging.run_dir=" + (dir / name / "run").string()};
    return load_config((dir / "tiny.yaml").string(), overrides, ranks);
  }
};

TEST_F(TrainerShardedMasterWorld, EmaCheckpointAndEvaluationWorkWithShardedMasters) {
  if (size() != 2) GTEST_SKIP() << "dp 2 against one rank";
  std::filesystem::path dir = shared_directory();
  {
    Trainer sharded(ema_config(dir, "dp2", 2), *world_);
    ASSERT_LT(sharded.parameters().values().numel(), sharded.parameters().numel());  // the masters are sharded
    sharded.train();
    OwnedTensor trained_copy = host_copy(sharded.parameters().compute_values());
    sharded.evaluate(2);
    EXPECT_TRUE(testing::same_bytes(trained_copy, sharded.parameters().compute_values()));
  }
  {
    Trainer alone(ema_config(dir, "dp1_rank" + std::to_string(rank()), 1));
    alone.train();
  }
  barrier();
  // NOTE: the model tensors and "ema.<name>" alike; bf16 runs of 4 steps differ where a sum's order flips a rounding.
  expect_close_weights(dir / ("dp1_rank" + std::to_string(rank())) / "checkpoints" / step_dir_name(4),
                       dir / "dp2" / "checkpoints" / step_dir_name(4), 2e-2);
  barrier();
}

}  // namespace
}  // namespace hai
