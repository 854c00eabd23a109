// The communication plan (model/comm_plan.h) against bytes counted by hand for a small layout: pp 2 DualPipe x
// ep 2 x dp 2 (4 ranks), 2 MoE layers of hidden 128, 8 tokens per micro-batch, 2 experts per token, 4 micro-batches;
// the links by rank placement, the time at the configured bandwidths, what compute hides, and the FLOPs per stage.
// And the tp group's collectives at tp 2, with and without sequence parallelism.

#include <gtest/gtest.h>

#include <string>

#include "framework/config/config.h"
#include "model/comm_plan.h"
#include "model/parameters.h"
#include "tests/model/model_test_inputs.h"

namespace hai {
namespace {

// pp 2 DualPipe x dp 2 x ep 2 in fp8; the two stages hold one MoE layer each.
Config small_layout() {
  Config config;
  config.model = testing::tiny_test_model(2);
  config.model.hidden_size = 128;
  config.model.first_dense_layers = 0;
  config.model.mtp_depth = 0;
  config.train.seq_len = 8;
  config.train.micro_batch_size = 1;  // T = 8 tokens
  config.parallel.pp = 2;
  config.parallel.schedule = PipelineSchedule::dualpipe;
  config.parallel.dp = IntOrAuto{2};
  config.parallel.ep = 2;
  config.parallel.micro_batches = IntOrAuto{4};
  config.precision.mode = PrecisionMode::fp8;
  config.runtime.nvlink_gbps = 100;
  config.runtime.infiniband_gbps = 10;
  return config;
}

const Traffic& find(const RankCommunication& rank, const std::string& group, const std::string& name) {
  for (const Traffic& traffic : rank.traffic) {
    if (traffic.group == group && traffic.name == name) return traffic;
  }
  ADD_FAILURE() << "no " << group << " " << name;
  static const Traffic none;
  return none;
}

bool has(const RankCommunication& rank, const std::string& group) {
  for (const Traffic& traffic : rank.traffic) {
    if (traffic.group == group) return true;
  }
  return false;
}

bool has_traffic(const RankCommunication& rank, const std::string& group, const std::string& name) {
  for (const Traffic& traffic : rank.traffic) {
    if (traffic.group == group && traffic.name == name) return true;
  }
  return false;
}

struct ParameterTotals {
  double dense = 0, expert = 0;
  double dense_fp8_only = 0;  // of dense: the FP8 GEMMs' weights, without a bf16 copy under fp8
};

ParameterTotals parameter_totals(const ModelConfig& model) {
  ParameterTotals totals;
  for (const ParameterSpec& spec : deepseek_v3_parameters(model)) {
    auto numel = static_cast<double>(spec.shape.numel());
    (spec.group == ParameterGroup::expert ? totals.expert : totals.dense) += numel;
    if (spec.group == ParameterGroup::dense && spec.fp8_only) totals.dense_fp8_only += numel;
  }
  return totals;
}

// One node of 8 GPUs holds all 4 ranks: everything crosses NVLink. Each rank runs F and B of 4 (stage,
// micro-batch) chunks, each one MoE layer.
TEST(CommPlanTest, BytesOfPpTwoDualPipeEpTwoDpTwoByHand) {
  Config config = small_layout();
  CommPlan plan = plan_communication(config);
  ASSERT_EQ(plan.ranks.size(), 2u);
  ParameterTotals totals = parameter_totals(config.model);
  for (const RankCommunication& rank : plan.ranks) {
    SCOPED_TRACE(rank.pipeline_rank);
    // ep: per chunk 8 tokens x 2 rows, half of them to the other EP rank: 8 rows.
    constexpr double kRows = 4 * 8;  // 4 chunks
    EXPECT_DOUBLE_EQ(find(rank, "ep", "dispatch forward").nvlink_bytes, kRows * (128 + 4));  // e4m3 + one scale
    EXPECT_DOUBLE_EQ(find(rank, "ep", "combine forward").nvlink_bytes, kRows * 128 * 2);     // bf16
    EXPECT_DOUBLE_EQ(find(rank, "ep", "dispatch backward").nvlink_bytes, kRows * 128 * 2);
    EXPECT_DOUBLE_EQ(find(rank, "ep", "combine backward").nvlink_bytes, kRows * 128 * 2);
    EXPECT_DOUBLE_EQ(find(rank, "ep", "combine backward").infiniband_bytes, 0);
    // pp: rank 0 sends stage 0's output of micro-batches 0, 1 down and stage 1's input gradient of 2, 3 up (rank 1
    // the mirror image): 2 + 2 messages of [8, 128] fp32.
    EXPECT_DOUBLE_EQ(find(rank, "pp", "send activations").nvlink_bytes, 2 * 8 * 128 * 4);
    EXPECT_DOUBLE_EQ(find(rank, "pp", "send gradients").nvlink_bytes, 2 * 8 * 128 * 4);
    // dp: both stages' dense parameters on every rank (DualPipe), half of them sent in each ring collective:
    // fp32 gradients out; back the bf16 compute copy, or the fp32 values of the FP8 GEMMs' weights, which have none.
    EXPECT_DOUBLE_EQ(find(rank, "dp", "reduce-scatter").nvlink_bytes, totals.dense * 4 / 2);
    EXPECT_GT(totals.dense_fp8_only, 0);
    EXPECT_DOUBLE_EQ(find(rank, "dp", "all-gather").nvlink_bytes,
                     (totals.dense_fp8_only * 4 + (totals.dense - totals.dense_fp8_only) * 2) / 2);
    EXPECT_FALSE(has(rank, "expert_dp"));  // dp x tp / ep = 1
    // Every parameter (the rank's half of the experts) is on both pipeline ranks: an all-reduce of 2 sends all.
    EXPECT_DOUBLE_EQ(find(rank, "pp_replicas", "all-reduce").nvlink_bytes, 4 * (totals.dense + totals.expert / 2));
    EXPECT_FALSE(has(rank, "tp"));
    const Traffic& dispatch = find(rank, "ep", "dispatch forward");
    EXPECT_DOUBLE_EQ(dispatch.seconds, dispatch.nvlink_bytes / 100e9);
    EXPECT_EQ(dispatch.link, Link::nvlink);
  }
}

// Two GPUs per node: the ranks of pipeline rank 0 (ranks 0, 1) share one node, those of pipeline rank 1 another.
// The dp and ep groups stay on NVLink; pp sends and replica sums cross InfiniBand. One GPU per node: everything does.
TEST(CommPlanTest, GroupsAcrossNodesUseInfiniBand) {
  Config config = small_layout();
  config.runtime.gpus_per_node = 2;
  RankCommunication rank = plan_communication(config).ranks[0];
  EXPECT_EQ(find(rank, "dp", "reduce-scatter").link, Link::nvlink);
  EXPECT_GT(find(rank, "ep", "combine forward").nvlink_bytes, 0);
  const Traffic& sends = find(rank, "pp", "send activations");
  EXPECT_EQ(sends.link, Link::infiniband);
  EXPECT_DOUBLE_EQ(sends.infiniband_bytes, 2 * 8 * 128 * 4);
  EXPECT_DOUBLE_EQ(sends.seconds, sends.infiniband_bytes / 10e9);
  EXPECT_EQ(find(rank, "pp_replicas", "all-reduce").link, Link::infiniband);

  config.runtime.gpus_per_node = 1;
  rank = plan_communication(config).ranks[0];
  const Traffic& combine = find(rank, "ep", "combine forward");
  EXPECT_DOUBLE_EQ(combine.nvlink_bytes, 0);
  EXPECT_DOUBLE_EQ(combine.infiniband_bytes, 4 * 8 * 128 * 2);
  EXPECT_EQ(find(rank, "dp", "all-gather").link, Link::infiniband);
}

// Selective recomputation adds, per MoE layer and micro-batch in backward, the combine of the recomputed outputs and
// the dispatch of the experts' rows again for W: the forward's exchanges once more; none adds nothing.
TEST(CommPlanTest, SelectiveRecomputationExchangesTheCombineAndDispatchAgain) {
  Config config = small_layout();
  config.train.recompute = RecomputeMode::selective;
  CommPlan selective = plan_communication(config);
  config.train.recompute = RecomputeMode::none;
  CommPlan none = plan_communication(config);
  for (size_t r = 0; r < selective.ranks.size(); ++r) {
    const RankCommunication& rank = selective.ranks[r];
    EXPECT_DOUBLE_EQ(find(rank, "ep", "dispatch again").nvlink_bytes,
                     find(rank, "ep", "dispatch forward").nvlink_bytes);
    EXPECT_DOUBLE_EQ(find(rank, "ep", "combine again").nvlink_bytes,
                     find(rank, "ep", "combine forward").nvlink_bytes);
    for (const Traffic& traffic : none.ranks[r].traffic) {
      EXPECT_EQ(traffic.name.find("again"), std::string::npos) << traffic.name;
    }
  }
  EXPECT_GT(selective.moe_layer.backward_seconds, none.moe_layer.backward_seconds);
}

// tp 2 alone (2 ranks), fp32, recompute none: a dense layer and an MoE layer with a shared expert (hidden 8; MLA's
// latents q_lora 6 + kv_lora 4 + d_rope 2 = 12), no MTP, 2 micro-batches of 8 tokens. A tp rank sends half of each
// collective's payload per ring pass; an all-reduce makes two passes.
Config tensor_parallel_layout(bool sequence_parallel) {
  Config config;
  config.model = testing::tiny_test_model(2);
  config.model.moe.shared_experts = 1;
  config.model.mtp_depth = 0;
  config.train.seq_len = 8;
  config.train.micro_batch_size = 1;  // T = 8 tokens
  config.train.recompute = RecomputeMode::none;
  config.parallel.tp = 2;
  config.parallel.dp = IntOrAuto{1};
  config.parallel.micro_batches = IntOrAuto{2};
  config.parallel.sequence_parallel = sequence_parallel;
  config.precision.mode = PrecisionMode::fp32;
  config.runtime.nvlink_gbps = 100;
  config.runtime.infiniband_gbps = 10;
  return config;
}

TEST(CommPlanTest, TensorParallelAllReducesByHand) {
  RankCommunication rank = plan_communication(tensor_parallel_layout(false)).ranks[0];
  constexpr double kTokens = 2 * 8;  // a step's
  // forward, per token: the embedding's H, each layer's MLA H and FFN (dense, shared) H, the head's d(normed) H and
  // the loss's max and 3 sums, fp32: (8 + 2 x 16 + 8 + 4) x 4 bytes, 2 passes of half
  const Traffic& forward = find(rank, "tp", "all-reduce forward");
  EXPECT_DOUBLE_EQ(forward.nvlink_bytes, kTokens * (8 + 2 * 16 + 8 + 4) * 4);
  // backward, per token and layer: MLA's latents' gradients 12 and the FFN's H
  const Traffic& backward = find(rank, "tp", "all-reduce backward");
  EXPECT_DOUBLE_EQ(backward.nvlink_bytes, kTokens * 2 * (12 + 8) * 4);
  EXPECT_EQ(backward.link, Link::nvlink);
  EXPECT_DOUBLE_EQ(backward.seconds, backward.nvlink_bytes / 100e9);
  EXPECT_DOUBLE_EQ(backward.exposed_seconds, backward.seconds);  // on the compute stream
  EXPECT_FALSE(has(rank, "dp"));
  EXPECT_TRUE(has(rank, "expert_dp"));  // the routed experts' expert-DP group spans the tp ranks (dp x tp / ep = 2)
}

TEST(CommPlanTest, SequenceParallelGathersAndScattersByHand) {
  RankCommunication rank = plan_communication(tensor_parallel_layout(true)).ranks[0];
  constexpr double kHalf = 2 * 8 / 2.0;  // a step's tokens x (tp - 1) / tp
  // forward gathers, fp32, per token: each layer's latents and k_rope 12 and FFN x 8, the MoE router's scores 8 and
  // choices 2, the head's normed rows 8
  EXPECT_DOUBLE_EQ(find(rank, "tp", "all-gather forward").nvlink_bytes, kHalf * (2 * (12 + 8) + 8 + 2 + 8) * 4);
  // the embedding's rows, each layer's MLA and FFN outputs, the head's d(normed)
  EXPECT_DOUBLE_EQ(find(rank, "tp", "reduce-scatter forward").nvlink_bytes, kHalf * (8 + 2 * 2 * 8 + 8) * 4);
  // the loss's statistics on every token: an all-reduce (two passes)
  EXPECT_DOUBLE_EQ(find(rank, "tp", "all-reduce forward").nvlink_bytes, 2 * kHalf * 4 * 4);
  // backward gathers: the embedding's d_out, each layer's MLA and FFN d_out and the FFN's x again, the scores
  EXPECT_DOUBLE_EQ(find(rank, "tp", "all-gather backward").nvlink_bytes, kHalf * (8 + 2 * 3 * 8 + 8) * 4);
  EXPECT_DOUBLE_EQ(find(rank, "tp", "reduce-scatter backward").nvlink_bytes, kHalf * 2 * (12 + 8) * 4);
  EXPECT_FALSE(has_traffic(rank, "tp", "all-reduce backward"));
  // One GPU a node: the tp group crosses InfiniBand.
  Config config = tensor_parallel_layout(true);
  config.runtime.gpus_per_node = 1;
  const Traffic& across = find(plan_communication(config).ranks[0], "tp", "reduce-scatter backward");
  EXPECT_EQ(across.link, Link::infiniband);
  EXPECT_DOUBLE_EQ(across.infiniband_bytes, kHalf * 2 * (12 + 8) * 4);
  EXPECT_DOUBLE_EQ(across.exposed_seconds, across.infiniband_bytes / 10e9);
}

// bf16 dispatches bf16 rows; fp32 moves fp32 everywhere and all-gathers the fp32 values.
TEST(CommPlanTest, RowBytesFollowThePrecision) {
  Config config = small_layout();
  config.precision.mode = PrecisionMode::bf16;
  RankCommunication bf16 = plan_communication(config).ranks[0];
  EXPECT_DOUBLE_EQ(find(bf16, "ep", "dispatch forward").nvlink_bytes, 4 * 8 * 128 * 2);
  config.precision.mode = PrecisionMode::fp32;
  RankCommunication fp32 = plan_communication(config).ranks[0];
  EXPECT_DOUBLE_EQ(find(fp32, "ep", "dispatch forward").nvlink_bytes, 4 * 8 * 128 * 4);
  EXPECT_DOUBLE_EQ(find(fp32, "ep", "combine backward").nvlink_bytes, 4 * 8 * 128 * 4);
  EXPECT_DOUBLE_EQ(find(fp32, "dp", "all-gather").nvlink_bytes, parameter_totals(config.model).dense * 4 / 2);
}

// dp 4 x ep 2: the experts' state reduces over an expert-DP group of 2, the dense over 4.
TEST(CommPlanTest, ExpertsReduceOverTheExpertDataParallelGroup) {
  Config config = small_layout();
  config.parallel.dp = IntOrAuto{4};
  ParameterTotals totals = parameter_totals(config.model);
  RankCommunication rank = plan_communication(config).ranks[0];
  EXPECT_DOUBLE_EQ(find(rank, "dp", "reduce-scatter").nvlink_bytes, totals.dense * 4 * 3 / 4);
  EXPECT_DOUBLE_EQ(find(rank, "expert_dp", "reduce-scatter").nvlink_bytes, totals.expert / 2 * 4 / 2);
  // The routed experts are fp8_only under fp8: no 16-bit copy, their fp32 values are gathered.
  EXPECT_DOUBLE_EQ(find(rank, "expert_dp", "all-gather").nvlink_bytes, totals.expert / 2 * 4 / 2);
}

// Compute hides what runs beside it: at a rate too slow to hide nothing (compute hours long) only the all-to-alls of
// lone chunks and the replica sums stay exposed; at a rate fast enough to leave compute nothing, all of it.
TEST(CommPlanTest, ExposedTimeIsWhatComputeDoesNotHide) {
  Config config = small_layout();
  config.runtime.achieved_tflops = 1e-9;
  for (const RankCommunication& rank : plan_communication(config).ranks) {
    for (const Traffic& traffic : rank.traffic) {
      SCOPED_TRACE(traffic.group + " " + traffic.name);
      if (traffic.group == "dp" || traffic.group == "pp") {
        EXPECT_EQ(traffic.exposed_seconds, 0);
      }
      if (traffic.group == "pp_replicas") {
        EXPECT_DOUBLE_EQ(traffic.exposed_seconds, traffic.seconds);
      }
      if (traffic.group == "ep") {
        EXPECT_LT(traffic.exposed_seconds, traffic.seconds);  // FB pairs hide some
      }
    }
  }
  config.runtime.achieved_tflops = 1e6;
  for (const RankCommunication& rank : plan_communication(config).ranks) {
    EXPECT_NEAR(rank.exposed_seconds(), rank.traffic_seconds(), 1e-3 * rank.traffic_seconds());
  }
}

// Three times the stages' forward FLOPs is the model's training FLOPs (with MTP: its block and its head use).
TEST(CommPlanTest, StageFlopsSumToTheTrainingFlops) {
  Config config = small_layout();
  config.model = testing::tiny_test_model(4);
  double total = 0;
  for (double stage : stage_forward_flops_per_token(config)) total += 3 * stage;
  EXPECT_NEAR(total, training_flops_per_token(config.model, config.train.seq_len), 1e-9 * total);
}

// The MoE layer's ratio: its forward FLOPs at the rate against its forward dispatch + combine.
TEST(CommPlanTest, MoeLayerRatioIsComputeOverAllToAll) {
  Config config = small_layout();
  config.runtime.gpus_per_node = 1;
  MoeLayerCommunication layer = plan_communication(config).moe_layer;
  EXPECT_DOUBLE_EQ(layer.forward_infiniband_bytes, 8 * (128 + 4 + 256));
  EXPECT_DOUBLE_EQ(layer.forward_seconds, 8 * (128 + 4 + 256) / 10e9);
  EXPECT_DOUBLE_EQ(layer.backward_seconds, 2 * 8 * 256 / 10e9);
  double flops = stage_forward_flops_per_token(config)[0] * 8;  // stage 0 is that one MoE layer
  EXPECT_DOUBLE_EQ(layer.forward_compute_seconds, flops / (config.runtime.achieved_tflops * 1e12));
  EXPECT_DOUBLE_EQ(layer.forward_ratio(), layer.forward_compute_seconds / layer.forward_seconds);
}

}  // namespace
}  // namespace hai
