// The 16-stage rehearsal on CPU ranks (mpirun -np 32): the tiny model with 32 layers trained with parallel.pp 16
// under DualPipe and under DualPipeV, with dp 2 and ep 2, reproduces the single-rank losses (step 1 to 1e-9, ten
// steps to 1e-4 relative, fp32), and every rank's store holds exactly the parameters of its own stages: the
// decoder layers of its chunks' stages (placement.h), the embedding with stage 0 (and with stage S-1, whose MTP
// module reads it), the final norm, head and MTP with stage S-1, and of the routed experts only its EP rank's.
// The single-rank reference runs on rank 0 of the same job while the others wait.

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "apps/hai-train/trainer.h"
#include "model/expert_parallel_parameters.h"
#include "model/pipeline_stage.h"
#include "parallel/pipeline/placement.h"
#include "tests/apps/metrics_file.h"
#include "tests/apps/tiny_config.h"
#include "tests/framework/comm/world_fixture.h"

namespace hai {
namespace {

constexpr int kRanks = 32;

// The parameter elements the rank at pipeline rank `pp_rank`, EP rank `ep_rank` must hold, counted from the
// stage layout without model/rank_share.h.
int64_t own_stage_elements(const Config& config, int pp_rank, int ep_rank) {
  const ModelConfig& model = config.model;
  PipelineShape shape{.schedule = config.parallel.schedule, .ranks = static_cast<int>(config.parallel.pp),
                      .micro_batches = 1};
  std::vector<StageLayers> stages = pipeline_stages(model, stage_count(shape), config.parallel.stage_layers);
  std::set<int64_t> layers;
  bool first = false, last = false;
  for (int chunk = 0; chunk < chunk_count(shape); ++chunk) {
    const StageLayers& stage = stages[static_cast<size_t>(stage_of_chunk(shape, pp_rank, chunk))];
    for (int64_t layer = stage.first_layer; layer < stage.first_layer + stage.layers; ++layer) layers.insert(layer);
    first |= stage.first;
    last |= stage.last;
  }
  if (last) {
    for (int64_t depth = 0; depth < model.mtp_depth; ++depth) layers.insert(model.num_layers + depth);
  }
  int64_t elements = 0;
  for (const ParameterSpec& spec :
       expert_parallel_parameters(model, ep_rank, static_cast<int>(config.parallel.ep))) {
    bool held = false;
    if (spec.name.starts_with("model.layers.")) {
      held = layers.contains(std::stoll(spec.name.substr(13)));
    } else if (spec.name == "model.embed_tokens.weight") {
      held = first || (last && model.mtp_depth > 0);
    } else {
      held = last;  // the final norm and the head
    }
    if (held) elements += spec.shape.numel();
  }
  return elements;
}

class PipelineRehearsal : public testing::World {
 protected:
  // The tiny model of dir/tiny.yaml with 32 layers, 10 steps of 64 sequences in micro-batches of one, no
  // checkpoints, its metrics in dir/<name>/run.
  Config config_for(const std::filesystem::path& dir, const std::string& name, int ranks,
                    const std::vector<std::string>& layout) const {
    std::vector<std::string> overrides = {"model.num_layers=32", "train.steps=10", "train.micro_batch_size=1",
                                          "train.global_batch_size=64", "checkpoint.save=false",
                                          "logging.interval=1", "logging.run_dir=" + (dir / name / "run").string()};
    overrides.insert(overrides.end(), layout.begin(), layout.end());
    return load_config((dir / "tiny.yaml").string(), overrides, ranks);
  }

  void rehearse(const std::string& schedule) {
    ASSERT_EQ(size(), kRanks) << "run under mpirun -np 32";
    testing::TempDirectory dir;  // each rank's own
    testing::write_tiny_config(dir.path());
    std::vector<double> reference;  // rank 0: the single-rank losses
    if (rank() == 0) {
      Trainer single(config_for(dir.path(), "single", 1, {}));
      single.train();
      for (const auto& step : testing::read_metrics(dir.path() / "single" / "run").steps) {
        reference.push_back(step["loss"].get<double>());
      }
    }
    world_->barrier();
    Config config = config_for(dir.path(), "pipelined", size(),
                               {"parallel.pp=16", "parallel.ep=2", "parallel.schedule=" + schedule});
    ASSERT_EQ(config.parallel.dp.value(), 2);
    Trainer trainer(config, *world_);
    int pp_rank = rank() / 2, dp_rank = rank() % 2;  // rank = dp + dp x pp
    int64_t elements = own_stage_elements(config, pp_rank, dp_rank % 2);
    EXPECT_EQ(trainer.parameters().values().bytes(), elements * 4) << "rank " << rank();
    int64_t trainable = 0;
    for (const Parameter& parameter : trainer.parameters().parameters()) {
      if (parameter.spec.trainable) trainable += parameter.spec.shape.numel();
    }
    EXPECT_EQ(trainer.parameters().grads().bytes(), trainable * 4) << "rank " << rank();
    trainer.train();
    if (rank() != 0) return;
    std::vector<double> losses;
    for (const auto& step : testing::read_metrics(dir.path() / "pipelined" / "run").steps) {
      losses.push_back(step["loss"].get<double>());
    }
    ASSERT_EQ(losses.size(), 10u);
    ASSERT_EQ(reference.size(), 10u);
    EXPECT_NEAR(losses[0], reference[0], 1e-9 * std::abs(reference[0]));
    for (size_t step = 0; step < losses.size(); ++step) {
      EXPECT_NEAR(losses[step], reference[step], 1e-4 * std::abs(reference[step])) << "step " << step + 1;
    }
  }
};

TEST_F(PipelineRehearsal, SixteenStagesDualPipe) { rehearse("dualpipe"); }

TEST_F(PipelineRehearsal, SixteenStagesDualPipeV) { rehearse("dualpipev"); }

}  // namespace
}  // namespace hai
