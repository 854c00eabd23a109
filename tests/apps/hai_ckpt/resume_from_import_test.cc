// hai-train continues from an import-hf checkpoint: the Trainer loads exactly the imported weights (weights only:
// fresh AdamW moments, EMA at the weights, data from its first sample), trains, and saves full checkpoints.
// Also the binary end to end: export-hf, import-hf --config, exit codes.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "apps/hai-ckpt/checkpoint_summary.h"
#include "apps/hai-ckpt/hf_export.h"
#include "apps/hai-ckpt/hf_import.h"
#include "apps/hai-train/trainer.h"
#include "framework/checkpoint/resolve_checkpoint.h"
#include "tests/apps/hai_ckpt/hai_ckpt_test_util.h"
#include "tests/framework/checkpoint/checkpoint_test_util.h"

namespace hai {
namespace {

using testing::ScratchDir;

int run_hai_ckpt(const std::string& arguments, const ScratchDir& dir) {
  std::string command = std::string(HAI_CKPT_BINARY) + " " + arguments + " >" + dir / "out" + " 2>&1";
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// After 2 steps with decay 0.9, EMA = 0.81 W0 + 0.09 W1 + 0.1 W2, within a few AdamW steps (lr 2.2e-4 each) of
// the weights W2. Had the EMA started at the trainer's random init (std 0.006) instead of the imported W0
// (std 0.05), it would be about 0.81 x 0.05 away.
void expect_ema_started_at_the_weights(const CheckpointReader& reader) {
  for (const TensorRecord& tensor : reader.tensors()) {
    if (tensor.group != CheckpointGroup::model) continue;
    OwnedTensor weights(Shape(tensor.shape), DType::f32), ema(Shape(tensor.shape), DType::f32);
    reader.read(tensor.name, weights);
    reader.read("ema." + tensor.name, ema);
    for (int64_t i = 0; i < weights.numel(); ++i) {
      ASSERT_NEAR(ema.data<float>()[i], weights.data<float>()[i], 2e-3) << tensor.name << " element " << i;
    }
  }
}

class ResumeFromImportTest : public ::testing::Test {
 protected:
  // A trainer checkpoint of known weights, exported as BF16 and imported back into `imported`.
  void SetUp() override {
    Config config = testing::tiny_hf_config(dir_.str());
    testing::write_trainer_checkpoint(dir_ / "ckpt", config, 7, 28, false, contents_);
    export_hf(dir_ / "ckpt", dir_ / "hf", {});
    import_hf(dir_ / "hf", dir_ / "imported", config);
  }

  ScratchDir dir_;
  testing::CheckpointContents contents_;
};

TEST_F(ResumeFromImportTest, TrainerLoadsTheImportedWeightsAndTrains) {
  for (bool ema : {false, true}) {
    SCOPED_TRACE(ema ? "with EMA" : "without EMA");
    std::string checkpoints = dir_ / (ema ? "trained-ema" : "trained");
    Config config = testing::tiny_hf_config(
        dir_.str(), {"checkpoint.resume=" + dir_ / "imported", "checkpoint.dir=" + checkpoints,
                     std::string("ema.enabled=") + (ema ? "true" : "false"), "ema.decay=0.9"});
    Trainer trainer(config);
    EXPECT_EQ(trainer.resume(), 0);
    for (const Parameter& parameter : trainer.parameters().parameters()) {
      EXPECT_TRUE(testing::same_bits(parameter.value, contents_.parameters.at(parameter.spec.name)))
          << parameter.spec.name;
    }
    trainer.train();
    EXPECT_EQ(trainer.step(), 2);
    std::optional<std::string> saved = latest_checkpoint(checkpoints);
    ASSERT_TRUE(saved.has_value());
    CheckpointSummary summary = summarize_checkpoint(CheckpointReader(*saved));
    EXPECT_EQ(summary.step, 2);
    EXPECT_EQ(summary.consumed_samples, 8);  // 2 steps x 4 sequences, from the first sample
    EXPECT_TRUE(summary.optimizer_state);
    EXPECT_EQ(summary.ema, ema);
    if (ema) expect_ema_started_at_the_weights(CheckpointReader(*saved));
  }
}

TEST_F(ResumeFromImportTest, TheBinaryExportsAndImports) {
  std::string config = testing::write_tiny_hf_config(dir_.str(), "cli.yaml");
  EXPECT_EQ(run_hai_ckpt("export-hf " + dir_ / "ckpt" + " " + dir_ / "cli-hf" + " --dtype fp8 --shard-size 4096", dir_),
            0)
      << testing::file_text(dir_ / "out");
  EXPECT_EQ(run_hai_ckpt("import-hf " + dir_ / "cli-hf" + " " + dir_ / "cli-imported" + " --config " + config, dir_),
            0)
      << testing::file_text(dir_ / "out");
  EXPECT_EQ(summarize_checkpoint(CheckpointReader(dir_ / "cli-imported/step_00000000")).model_group.tensors,
            static_cast<int64_t>(contents_.parameters.size()));
  // A mismatch names the tensor and exits 1; a bad config or command line exits 2.
  EXPECT_EQ(run_hai_ckpt("import-hf " + dir_ / "cli-hf" + " " + dir_ / "other" + " --config " + config +
                             " --set model.hidden_size=24",
                         dir_),
            1);
  EXPECT_NE(testing::file_text(dir_ / "out").find("model.embed_tokens.weight"), std::string::npos)
      << testing::file_text(dir_ / "out");
  EXPECT_EQ(run_hai_ckpt("import-hf " + dir_ / "cli-hf" + " " + dir_ / "other" + " --config " + config +
                             " --set model.no_such_key=1",
                         dir_),
            2);
  EXPECT_EQ(run_hai_ckpt("export-hf " + dir_ / "ckpt" + " " + dir_ / "x" + " --dtype fp16", dir_), 2);
}

}  // namespace
}  // namespace hai
