// The --dry-run plan (model/memory_estimate.h) against what the Trainer allocates on CPU ranks: on every rank of
// several layouts (pipeline under each schedule, with dp and ep beside it; fp32 and bf16), the parameters of the
// rank's store are exactly those the plan gives its pipeline rank, and its parameter, gradient and optimizer bytes
// (the store's values, compute copy and gradients, ZeRO-1's moments) are within 10% of the plan's; and the peak of
// host bytes while it trains is within 10% of the plan's total (backward temporaries and pipeline buffers included)
// for dp 2 (recompute none, selective, full), pp 2 under 1F1B, DualPipe and DualPipeV (none, selective), pp 4 1F1B,
// pp 2 x ep 2 under DualPipe and DualPipeV.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "apps/hai-train/trainer.h"
#include "framework/tensor/device_memory.h"
#include "model/memory_estimate.h"
#include "tests/apps/tiny_config.h"
#include "tests/framework/comm/world_fixture.h"

namespace hai {
namespace {

using testing::TempDirectory;

// The tiny config of 4 layers, one sequence per micro-batch, 8 per step, under `layout`, for `ranks` ranks.
Config layout_config(const TempDirectory& dir, const std::vector<std::string>& layout, int ranks) {
  testing::write_tiny_config(dir.path());
  std::vector<std::string> overrides = {"model.num_layers=4", "train.micro_batch_size=1", "train.global_batch_size=8",
                                        "train.steps=2", "checkpoint.save=false",
                                        "runtime.device=cpu"};
  overrides.insert(overrides.end(), layout.begin(), layout.end());
  return load_config((dir.path() / "tiny.yaml").string(), overrides, ranks);
}

class TrainerMemoryPlan : public testing::World {
 protected:
  void check_layout(const std::vector<std::string>& layout) {
    SCOPED_TRACE(::testing::PrintToString(layout));
    TempDirectory dir;
    Config config = layout_config(dir, layout, size());
    Trainer trainer(config, *world_);
    std::vector<PipelineRankMemory> plan = estimate_pipeline_memory(config);
    int pipeline_rank = rank() / static_cast<int>(config.parallel.dp.value());  // rank = dp + dp x pp (tp 1)
    const PipelineRankMemory& mine = plan.at(static_cast<size_t>(pipeline_rank));
    const ParameterStore& store = trainer.parameters();
    EXPECT_EQ(store.numel(), mine.parameters) << "pipeline rank " << pipeline_rank;
    int64_t compute = store.compute_dtype() == DType::f32 ? 0 : store.compute_values().bytes();
    auto measured_params = static_cast<double>(store.values().bytes() + compute);
    auto measured_grads = static_cast<double>(store.grads().bytes());
    auto measured_optimizer = static_cast<double>(trainer.optimizer().state_bytes());
    EXPECT_NEAR(measured_params, static_cast<double>(mine.memory.params), 0.1 * mine.memory.params);
    EXPECT_NEAR(measured_grads, static_cast<double>(mine.memory.grads), 0.1 * mine.memory.grads);
    EXPECT_NEAR(measured_optimizer, static_cast<double>(mine.memory.optimizer), 0.1 * mine.memory.optimizer);
  }
};

TEST_F(TrainerMemoryPlan, EveryRankAllocatesItsPlannedShare) {
  std::vector<std::vector<std::string>> layouts;
  if (size() == 2) {
    layouts = {{"parallel.pp=2", "parallel.schedule=1f1b"},
               {"parallel.pp=2", "parallel.schedule=dualpipe", "precision.mode=bf16"},
               {"parallel.pp=2", "parallel.schedule=dualpipev"},
               {"parallel.ep=2"}};
  } else if (size() == 4) {
    layouts = {{"parallel.pp=4", "parallel.schedule=1f1b"},
               {"parallel.pp=2", "parallel.ep=2", "parallel.schedule=dualpipe"},
               {"parallel.pp=2", "parallel.schedule=1f1b", "precision.mode=bf16"}};
  } else {
    GTEST_SKIP() << "layouts for 2 and 4 ranks";
  }
  for (const std::vector<std::string>& layout : layouts) check_layout(layout);
}

// Measured peak: the most host bytes the Trainer's Buffers hold at once (host_memory_stats) while it is built and
// trains a few steps, beside the plan's total for the rank's pipeline rank.
class TrainerPeakMemory : public testing::World {
 protected:
  void check_layout(const std::vector<std::string>& layout) {
    SCOPED_TRACE(::testing::PrintToString(layout));
    TempDirectory dir;
    Config config = layout_config(dir, layout, size());
    std::vector<PipelineRankMemory> plan = estimate_pipeline_memory(config);
    int pipeline_rank = rank() / static_cast<int>(config.parallel.dp.value());
    const RankMemory& mine = plan.at(static_cast<size_t>(pipeline_rank)).memory;
    size_t before = host_memory_stats().allocated_bytes;
    reset_peak_host_memory();
    {
      Trainer trainer(config, *world_);
      trainer.train();
    }
    auto measured = static_cast<double>(host_memory_stats().peak_allocated_bytes - before);
    std::printf("rank %d pipeline rank %d %s: plan %lld (params %lld grads %lld optimizer %lld activations %lld "
                "backward %lld buffers %lld), measured peak %.0f (%.3f x the plan)\n",
                rank(), pipeline_rank, ::testing::PrintToString(layout).c_str(),
                static_cast<long long>(mine.total()), static_cast<long long>(mine.params),
                static_cast<long long>(mine.grads), static_cast<long long>(mine.optimizer),
                static_cast<long long>(mine.activations), static_cast<long long>(mine.backward), static_cast<long long>(mine.pipeline_buffers), measured,
                measured / static_cast<double>(mine.total()));
    EXPECT_NEAR(measured, static_cast<double>(mine.total()), 0.1 * static_cast<double>(mine.total()))
        << "pipeline rank " << pipeline_rank;
  }
};

TEST_F(TrainerPeakMemory, PeakHostBytesMatchThePlan) {
  std::vector<std::vector<std::string>> layouts;
  if (size() == 2) {
    layouts = {{"train.recompute=none"},  // pp 1, dp 2
               {"train.recompute=selective"},
               {"train.recompute=full"},
               {"parallel.pp=2", "parallel.schedule=dualpipe", "train.recompute=none"},
               {"parallel.pp=2", "parallel.schedule=dualpipe", "train.recompute=selective"},
               {"parallel.pp=2", "parallel.schedule=1f1b", "train.recompute=none"},
               {"parallel.pp=2", "parallel.schedule=1f1b", "train.recompute=selective"},
               {"parallel.pp=2", "parallel.schedule=dualpipev", "train.recompute=none"},
               {"parallel.pp=2", "parallel.schedule=dualpipev", "train.recompute=selective"}};
  } else if (size() == 4) {
    layouts = {{"parallel.pp=2", "parallel.ep=2", "parallel.schedule=dualpipe", "train.recompute=selective"},
               {"parallel.pp=4", "parallel.schedule=1f1b", "train.recompute=selective"},
               {"parallel.pp=2", "parallel.ep=2", "parallel.schedule=dualpipev", "train.recompute=none"}};
  }
  for (const std::vector<std::string>& layout : layouts) check_layout(layout);
}

}  // namespace
}  // namespace hai
