// The --dry-run plan (model/memory_estimate.h) against what the Trainer allocates on CPU ranks: on every rank of
// several layouts (pipeline under each schedule, with dp, ep or tp beside it; fp32 and bf16), the parameters of the
// rank's store are exactly those the plan gives its pipeline rank, and its parameter, gradient and optimizer bytes
// (the store's values, compute copy and gradients, ZeRO-1's moments) are within 10% of the plan's; and the peak of
// host bytes while it trains is within 10% of the plan's total (backward temporaries and pipeline buffers included)
// for dp 2 (recompute none, selective, full), pp 2 under 1F1B, DualPipe and DualPipeV (none, selective), pp 4 1F1B,
// pp 2 x ep 2 under DualPipe and DualPipeV, tp 2 (with and without sequence parallelism), and bf16. In mixed
// precision ZeRO-1 shards the fp32 master with the moments: at dp 2 a rank's sharded master and moment bytes are half
// of one rank's.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "apps/hai-train/trainer.h"
#include "framework/tensor/device_memory.h"
#include "model/memory_estimate.h"
#include "parallel/rank_values.h"
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
    int pipeline_rank = rank() / static_cast<int>(config.parallel.dp.value() * config.parallel.tp);  // topology.h
    const PipelineRankMemory& mine = plan.at(static_cast<size_t>(pipeline_rank));
    const ParameterStore& store = trainer.parameters();
    EXPECT_EQ(store.numel(), mine.parameters) << "pipeline rank " << pipeline_rank;
    auto compute = store.compute_dtype() == DType::f32 ? 0 : store.compute_values().bytes();
    for (const Parameter& parameter : store.parameters()) {  // the FP8 copies, as stored and transposed
      const Fp8Weight& fp8 = parameter.fp8;
      if (fp8.defined()) compute += 2 * (fp8.values.bytes() + fp8.scales.bytes());
    }
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
               {"parallel.ep=2"},
               {"parallel.tp=2", "model.vocab_size=256"},
               {"precision.mode=bf16"},
               {"parallel.ep=2", "precision.mode=fp8"}};
  } else if (size() == 4) {
    layouts = {{"parallel.pp=4", "parallel.schedule=1f1b"},
               {"parallel.tp=2", "parallel.pp=2", "parallel.schedule=dualpipe", "model.vocab_size=256"},
               {"parallel.pp=2", "parallel.ep=2", "parallel.schedule=dualpipe"},
               {"parallel.pp=2", "parallel.schedule=1f1b", "precision.mode=bf16"}};
  } else {
    GTEST_SKIP() << "layouts for 2 and 4 ranks";
  }
  for (const std::vector<std::string>& layout : layouts) check_layout(layout);
}

// The fp32 master and the moments, measured from what the Trainer allocated: the store's own values and ZeRO-1's
// state (moments and master shards). At dp 2 in bf16 the store keeps only the masters the model reads in fp32 (the
// embedding, norms, MoE gates) and the routing biases; ZeRO-1's state is half of everything else of one rank's.
TEST_F(TrainerMemoryPlan, MasterAndMomentBytesFallByDp) {
  if (size() != 2) GTEST_SKIP() << "dp 2 against one rank";
  TempDirectory dir;
  Config dp2 = layout_config(dir, {"precision.mode=bf16"}, 2);
  Config dp1 = layout_config(dir, {"precision.mode=bf16"}, 1);
  Trainer sharded(dp2, *world_);
  Trainer whole(dp1);
  auto held = static_cast<double>(sharded.parameters().values().bytes());
  auto state = static_cast<double>(sharded.optimizer().state_bytes());
  auto whole_held = static_cast<double>(whole.parameters().values().bytes());
  auto whole_state = static_cast<double>(whole.optimizer().state_bytes());
  std::printf("rank %d: master + moments at dp 1: %.0f (store %.0f + ZeRO-1 %.0f); at dp 2: %.0f (store %.0f + "
              "ZeRO-1 %.0f)\n",
              rank(), whole_held + whole_state, whole_held, whole_state, held + state, held, state);
  EXPECT_EQ(whole_held, 4.0 * static_cast<double>(whole.parameters().numel()));  // one rank shards nothing
  EXPECT_LT(held, 0.25 * whole_held);  // the whole masters left: embedding, head norm, norms, gates, biases
  double sharded_at_one_rank = whole_held + whole_state - held;  // the master and moments ZeRO-1 shards
  EXPECT_NEAR(state, sharded_at_one_rank / 2, 0.002 * sharded_at_one_rank);
  EXPECT_NEAR(sum_over_ranks(*world_, state), sharded_at_one_rank, 0.001 * sharded_at_one_rank);
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
    int pipeline_rank = rank() / static_cast<int>(config.parallel.dp.value() * config.parallel.tp);
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
               {"parallel.pp=2", "parallel.schedule=dualpipev", "train.recompute=selective"},
               {"parallel.tp=2", "model.vocab_size=256", "train.recompute=none"},
               {"parallel.tp=2", "parallel.sequence_parallel=true", "model.vocab_size=256", "train.recompute=none"},
               {"precision.mode=bf16", "train.recompute=none"}};
  } else if (size() == 4) {
    layouts = {{"parallel.pp=2", "parallel.ep=2", "parallel.schedule=dualpipe", "train.recompute=selective"},
               {"parallel.pp=4", "parallel.schedule=1f1b", "train.recompute=selective"},
               {"parallel.pp=2", "parallel.ep=2", "parallel.schedule=dualpipev", "train.recompute=none"}};
  }
  for (const std::vector<std::string>& layout : layouts) check_layout(layout);
}

}  // namespace
}  // namespace hai
