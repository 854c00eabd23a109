// Dynamic loss scaling on data-parallel ranks (precision.mode fp16): an infinity in ONE rank's fp16 weight copy
// makes only that rank's gradients non-finite, yet every rank skips the step, halves the scale and keeps its
// parameters bit for bit, so the ranks stay bitwise equal; resumed from the checkpoint of that step (which
// rebuilds the compute copies from the untouched master weights), every rank trains on with the halved scale and
// equal parameters. The tiny model without MoE layers, every rank one data-parallel rank, one shared directory.

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "apps/hai-train/trainer.h"
#include "tests/apps/metrics_file.h"
#include "tests/apps/tiny_config_world.h"

namespace hai {
namespace {

using testing::MetricsFile;
using testing::read_metrics;

constexpr double kInitialScale = 1024;
constexpr uint16_t kFp16Infinity = 0x7c00;

// Two fp32 tensors of the same size hold the same bits.
bool same_bits(const Tensor& a, const Tensor& b) {
  return std::memcmp(a.raw(), b.raw(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

class TrainerLossScaleWorld : public testing::TinyConfigWorld {
 protected:
  // The tiny fp16 config without MoE layers for this world, one sequence per micro-batch, training `steps` steps.
  Config fp16_config(const std::filesystem::path& dir, int64_t steps) const {
    std::vector<std::string> overrides = {"precision.mode=fp16", "model.first_dense_layers=2", "model.mtp_depth=0",
                                          "train.micro_batch_size=1", "train.steps=" + std::to_string(steps),
                                          "precision.loss_scale.init=1024", "precision.loss_scale.window=1000"};
    return load_config((dir / "tiny.yaml").string(), overrides, size());
  }

  // Every rank's parameters equal rank 0's, bit for bit.
  void expect_parameters_equal_across_ranks(const Trainer& trainer, const std::string& when) {
    const Tensor values = trainer.parameters().values();  // [N] fp32
    OwnedTensor rank0_values(values.shape(), DType::f32);  // [N]
    copy_tensor(rank0_values, values);
    world_->broadcast(rank0_values, 0);
    EXPECT_TRUE(same_bits(rank0_values, values)) << "rank " << rank() << ": parameters differ from rank 0's " << when;
  }
};

TEST_F(TrainerLossScaleWorld, AnInfinityOnOneRankSkipsTheStepOnEveryRank) {
  const std::filesystem::path dir = shared_directory();
  {
    Trainer trainer(fp16_config(dir, /*steps=*/1), *world_);
    const Tensor values = trainer.parameters().values();  // [N] fp32
    OwnedTensor before(values.shape(), DType::f32);       // [N]
    copy_tensor(before, values);
    if (rank() == size() - 1) {
      const Parameter& poisoned = trainer.parameters()["model.layers.0.mlp.down_proj.weight"];
      ASSERT_EQ(poisoned.compute.dtype(), DType::f16);
      static_cast<uint16_t*>(poisoned.compute.raw())[0] = kFp16Infinity;
    }
    trainer.train();
    EXPECT_TRUE(same_bits(before, values)) << "rank " << rank() << ": the skipped step changed the parameters";
    EXPECT_EQ(trainer.loss_scale(), kInitialScale / 2) << "rank " << rank();
    expect_parameters_equal_across_ranks(trainer, "after the skipped step");
  }
  {
    Trainer resumed(fp16_config(dir, /*steps=*/3), *world_);
    ASSERT_EQ(resumed.resume(), 1);
    resumed.train();
    EXPECT_EQ(resumed.loss_scale(), kInitialScale / 2) << "rank " << rank();
    expect_parameters_equal_across_ranks(resumed, "after two clean steps");
  }
  if (rank() == 0) {
    MetricsFile metrics = read_metrics(dir / "run");
    ASSERT_EQ(metrics.steps.size(), 3u);
    EXPECT_EQ(metrics.steps[0]["skipped"], true);
    EXPECT_EQ(metrics.steps[0]["loss_scale"], kInitialScale);
    for (size_t step = 1; step < 3; ++step) {
      EXPECT_EQ(metrics.steps[step]["skipped"], false) << step;
      EXPECT_EQ(metrics.steps[step]["loss_scale"], kInitialScale / 2) << step;
    }
  }
  barrier();
}

}  // namespace
}  // namespace hai
