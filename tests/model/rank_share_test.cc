// A rank's share of the model (model/rank_share.h) over every schedule, pp in {1, 2, 4, 16} and ep in {1, 2}: the
// shares of all ranks cover the model, each rank holds exactly the layers of its stages (the embedding with stage 0,
// the head and MTP with stage S-1, the embedding again there when the two sit apart), every replica names the same
// pipeline ranks, one of them counts it, and the routed experts split over ep.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "model/expert_parallel_parameters.h"
#include "model/parameters.h"
#include "model/pipeline_stage.h"
#include "model/rank_share.h"
#include "parallel/pipeline/placement.h"

namespace hai {
namespace {

ModelConfig model_of(int64_t layers) {
  ModelConfig model;
  model.num_layers = layers;
  return model;
}

ParallelConfig layout(PipelineSchedule schedule, int64_t pp, int64_t ep) {
  ParallelConfig parallel;
  parallel.schedule = schedule;
  parallel.pp = pp;
  parallel.ep = ep;
  parallel.dp = ep;
  parallel.micro_batches = 4 * pp;
  return parallel;
}

// The layers (MTP blocks numbered on) the stages of pipeline rank `rank` hold.
std::set<int64_t> expected_layers(const ModelConfig& model, const ParallelConfig& parallel, int rank) {
  PipelineShape shape{.schedule = parallel.schedule, .ranks = static_cast<int>(parallel.pp), .micro_batches = 1};
  std::vector<StageLayers> stages = pipeline_stages(model, stage_count(shape), {});
  std::set<int64_t> layers;
  for (int chunk = 0; chunk < chunk_count(shape); ++chunk) {
    const StageLayers& stage = stages[static_cast<size_t>(stage_of_chunk(shape, rank, chunk))];
    for (int64_t layer = stage.first_layer; layer < stage.first_layer + stage.layers; ++layer) layers.insert(layer);
    if (stage.last) {
      for (int64_t depth = 0; depth < model.mtp_depth; ++depth) layers.insert(model.num_layers + depth);
    }
  }
  return layers;
}

int64_t layer_of(const std::string& name) {
  if (!name.starts_with("model.layers.")) return -1;
  return std::stoll(name.substr(13));
}

struct Holding {
  std::set<int> pp_ranks;  // the pipeline ranks (of the ep rank owning it) holding it
  std::vector<int> named;  // what each holder says its replicas are
  int counted = 0;         // holders that count it
};

void check_layout(PipelineSchedule schedule, int64_t pp, int64_t ep) {
  SCOPED_TRACE(fmt::format("schedule {}, pp {}, ep {}", static_cast<int>(schedule), pp, ep));
  ModelConfig model = model_of(32);
  ParallelConfig parallel = layout(schedule, pp, ep);
  const int64_t experts_per_rank = model.moe.routed_experts / ep;
  std::map<std::pair<std::string, int>, Holding> holdings;  // by (name, ep rank)
  for (int pp_rank = 0; pp_rank < pp; ++pp_rank) {
    std::set<int64_t> layers = expected_layers(model, parallel, pp_rank);
    for (int ep_rank = 0; ep_rank < ep; ++ep_rank) {
      std::set<int64_t> held_layers;
      bool embedding = false, head = false;
      for (const HeldParameter& held : rank_share(model, parallel, {.dp = ep_rank, .pp = pp_rank, .tp = 0})) {
        const std::string& name = held.spec.name;
        EXPECT_EQ(held.box_extents, held.spec.shape) << name;
        EXPECT_EQ(held.box_offsets, std::vector<int64_t>(static_cast<size_t>(held.spec.shape.rank()), 0)) << name;
        int64_t expert = routed_expert_of(name);
        EXPECT_EQ(held.reduce_over, expert >= 0 ? ReplicaGroup::expert_data_parallel : ReplicaGroup::data_parallel);
        if (expert >= 0) {
          EXPECT_EQ(expert / experts_per_rank, ep_rank) << name;
        }
        int64_t layer = layer_of(name);
        if (layer >= 0) held_layers.insert(layer);
        embedding |= name == "model.embed_tokens.weight";
        head |= name == "lm_head.weight";
        Holding& holding = holdings[{name, expert >= 0 ? ep_rank : 0}];
        if (expert < 0 && ep_rank > 0) continue;  // dense: the same on every ep rank
        holding.pp_ranks.insert(pp_rank);
        EXPECT_TRUE(std::ranges::is_sorted(held.pipeline_ranks)) << name;
        if (holding.named.empty()) holding.named = held.pipeline_ranks;
        EXPECT_EQ(holding.named, held.pipeline_ranks) << name;
        holding.counted += held.counts_here(pp_rank, 0) ? 1 : 0;
      }
      EXPECT_EQ(held_layers, layers) << "pipeline rank " << pp_rank;
      bool has_last = layers.contains(model.num_layers - 1), has_first = layers.contains(0);
      EXPECT_EQ(head, has_last) << "pipeline rank " << pp_rank;
      EXPECT_EQ(embedding, has_first || (has_last && model.mtp_depth > 0)) << "pipeline rank " << pp_rank;
    }
  }
  // Every parameter of the model is held, replicas agree on who holds them, and exactly one counts each.
  size_t expected_entries = 0;
  for (const ParameterSpec& spec : deepseek_v3_parameters(model)) {
    bool expert = routed_expert_of(spec.name) >= 0;
    int ep_rank = expert ? static_cast<int>(routed_expert_of(spec.name) / experts_per_rank) : 0;
    const Holding& holding = holdings[{spec.name, ep_rank}];
    ++expected_entries;
    ASSERT_FALSE(holding.pp_ranks.empty()) << spec.name;
    EXPECT_EQ(std::vector<int>(holding.pp_ranks.begin(), holding.pp_ranks.end()), holding.named) << spec.name;
    EXPECT_EQ(holding.counted, 1) << spec.name;
    size_t replicas = holding.pp_ranks.size();
    if (schedule == PipelineSchedule::dualpipe && pp > 1) {
      EXPECT_EQ(replicas, 2u) << spec.name;  // every stage twice
    } else if (schedule == PipelineSchedule::one_f_one_b && pp > 1 && spec.name == "model.embed_tokens.weight") {
      EXPECT_EQ(holding.named, (std::vector<int>{0, static_cast<int>(pp) - 1}));  // read by stage 0 and by MTP
    } else {
      EXPECT_EQ(replicas, 1u) << spec.name;
    }
  }
  EXPECT_EQ(holdings.size(), expected_entries);
}

TEST(RankShare, EverySchedulePipelineAndExpertSize) {
  for (PipelineSchedule schedule :
       {PipelineSchedule::one_f_one_b, PipelineSchedule::dualpipe, PipelineSchedule::dualpipev}) {
    for (int64_t pp : {1, 2, 4, 16}) {
      for (int64_t ep : {1, 2}) check_layout(schedule, pp, ep);
    }
  }
}

TEST(RankShare, OneRankHoldsTheWholeModel) {
  ModelConfig model;
  std::vector<HeldParameter> share =
      rank_share(model, layout(PipelineSchedule::one_f_one_b, 1, 1), {.dp = 0, .pp = 0, .tp = 0});
  std::vector<ParameterSpec> whole = deepseek_v3_parameters(model);
  ASSERT_EQ(share.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_EQ(share[i].spec.name, whole[i].name);
}

TEST(RankShare, ReplicaSets) {
  ModelConfig model = model_of(8);
  using Sets = std::vector<std::vector<int>>;
  EXPECT_EQ(pipeline_replica_sets(model, layout(PipelineSchedule::one_f_one_b, 1, 1)), Sets{});
  EXPECT_EQ(pipeline_replica_sets(model, layout(PipelineSchedule::one_f_one_b, 4, 1)), (Sets{{0, 3}}));
  EXPECT_EQ(pipeline_replica_sets(model, layout(PipelineSchedule::dualpipev, 4, 1)), Sets{});
  Sets dualpipe = pipeline_replica_sets(model, layout(PipelineSchedule::dualpipe, 4, 2));
  std::ranges::sort(dualpipe);
  EXPECT_EQ(dualpipe, (Sets{{0, 3}, {1, 2}}));
  model.mtp_depth = 0;  // no MTP: the embedding stays on stage 0 alone
  EXPECT_EQ(pipeline_replica_sets(model, layout(PipelineSchedule::one_f_one_b, 4, 1)), Sets{});
}

}  // namespace
}  // namespace hai
