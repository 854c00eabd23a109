// hai-train --dry-run: plans a config without training and prints one JSON object with the parameter counts and
// the memory of a rank.

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/config/load.h"
#include "model/parameters.h"
#include "tests/apps/command.h"

namespace hai {
namespace {

using testing::CommandResult;
using testing::last_line;
using testing::run_hai_train;
using testing::TempDirectory;

std::string shipped_config(const std::string& name) { return std::string(HAI_SOURCE_DIR) + "/configs/" + name; }

nlohmann::json dry_run(const std::string& arguments) {
  TempDirectory dir;
  CommandResult result = run_hai_train(arguments + " --dry-run", dir.path());
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return nlohmann::json::parse(last_line(result.out));
}

void expect_positive_memory(const nlohmann::json& report) {
  for (const char* field : {"params", "grads", "optimizer", "activations"}) {
    ASSERT_TRUE(report["memory_per_rank"].contains(field)) << field;
    EXPECT_GT(report["memory_per_rank"][field].get<int64_t>(), 0) << field;
  }
}

TEST(HaiTrainDryRunTest, DeepseekV3On2048RanksHas671BParametersWith37BActivated) {
  nlohmann::json report = dry_run("--config " + shipped_config("deepseek_v3_671b.yaml") + " --world-size 2048");
  EXPECT_EQ(report["world_size"], 2048);
  EXPECT_EQ(report["layout"]["dp"], 128);
  auto total = report["total_params"].get<double>(), activated = report["activated_params"].get<double>();
  EXPECT_LE(std::abs(total - 671e9), 0.005 * 671e9) << total;
  EXPECT_LE(std::abs(activated - 37e9), 0.03 * 37e9) << activated;
  ASSERT_TRUE(report.contains("mtp_params"));
  EXPECT_GT(report["mtp_params"].get<int64_t>(), 0);
  expect_positive_memory(report);
  // Issue 32: V3's layout (FP8, selective recomputation) plans at most 80 GiB on every rank (docs/scale.md).
  EXPECT_TRUE(report["fits"].get<bool>());
  EXPECT_LE(report["memory_per_rank"]["total"].get<double>(), 80.0 * (int64_t{1} << 30));
}

TEST(HaiTrainDryRunTest, TinyConfigReportsItsParameterCounts) {
  std::string path = shipped_config("tiny.yaml");
  nlohmann::json report = dry_run("--config " + path);
  ParameterCounts counts = count_parameters(load_config(path, {}, 1).model);
  EXPECT_EQ(report["world_size"], 1);
  EXPECT_EQ(report["total_params"], counts.total);
  EXPECT_EQ(report["activated_params"], counts.activated);
  EXPECT_EQ(report["mtp_params"], counts.mtp);
  EXPECT_LT(counts.activated, counts.total);
  EXPECT_GT(counts.mtp, 0);
  expect_positive_memory(report);
}

// Each pipeline rank plans only its stages' parameters (model/rank_share.h): under 1F1B the ranks' parameters sum to
// one rank's but for the embedding, which the last rank's MTP module reads too; the activations are each rank's own
// stage's, so an uneven split plans more on its heavier rank than an even one.
TEST(HaiTrainDryRunTest, PipelineRanksPlanTheirOwnStages) {
  std::string config = "--config " + shipped_config("tiny.yaml") + " --set model.num_layers=4";
  nlohmann::json one_rank = dry_run(config)["memory_per_rank"];
  std::string pp2 = config + " --world-size 2 --set parallel.pp=2 --set parallel.schedule=1f1b";
  nlohmann::json even = dry_run(pp2 + " --set 'parallel.stage_layers=[2,2]'");
  nlohmann::json uneven = dry_run(pp2 + " --set 'parallel.stage_layers=[1,3]'");
  ASSERT_EQ(even["memory_per_pipeline_rank"].size(), 2u);
  const nlohmann::json& first = even["memory_per_pipeline_rank"][0];
  const nlohmann::json& last = even["memory_per_pipeline_rank"][1];
  EXPECT_TRUE(first["embedding"].get<bool>());
  EXPECT_FALSE(first["head_and_mtp"].get<bool>());
  EXPECT_TRUE(last["head_and_mtp"].get<bool>());
  EXPECT_EQ(last["layers"], nlohmann::json::parse("[[2, 3]]"));
  ModelConfig model = load_config(shipped_config("tiny.yaml"), {"model.num_layers=4"}, 1).model;
  int64_t embedding_bytes = model.vocab_size * model.hidden_size * 4;  // fp32: the master is the compute copy
  EXPECT_EQ(first["grads"].get<int64_t>() + last["grads"].get<int64_t>(),
            one_rank["grads"].get<int64_t>() + embedding_bytes);
  for (const nlohmann::json& rank : even["memory_per_pipeline_rank"]) {
    EXPECT_LT(rank["params"].get<int64_t>(), one_rank["params"].get<int64_t>());
  }
  // 1F1B keeps pp = 2 micro-batches alive: [2, 2] saves 2 layers + MTP per micro-batch at most, [1, 3] 3 + MTP.
  EXPECT_GT(uneven["memory_per_rank"]["activations"].get<int64_t>(),
            even["memory_per_rank"]["activations"].get<int64_t>());
  EXPECT_TRUE(even["fits"].get<bool>());
  EXPECT_EQ(even["device_memory_gib"].get<double>(), 80.0);
  EXPECT_FALSE(dry_run(pp2 + " --device-memory-gib 0.0001")["fits"].get<bool>());
  // runtime.device_memory_gib is the default the flag overrides.
  nlohmann::json small = dry_run(pp2 + " --set runtime.device_memory_gib=1");
  EXPECT_EQ(small["device_memory_gib"].get<double>(), 1.0);
  EXPECT_EQ(small["fits"].get<bool>(),
            small["memory_per_rank"]["total"].get<double>() <= 1024.0 * 1024.0 * 1024.0);
  nlohmann::json flag = dry_run(pp2 + " --set runtime.device_memory_gib=1 --device-memory-gib 2");
  EXPECT_EQ(flag["device_memory_gib"].get<double>(), 2.0);
}

// fp8 keeps the bf16 compute copy of every parameter but the routed experts' (fp8_only), adds the FP8 copies
// (stored and transposed) of the FP8 GEMMs' weights. The routed experts'
// two e4m3 copies take the bytes of the bf16 copy they replace (plus block scales), so fp8 plans about as much
// parameter memory as bf16 plus the dense FP8 weights' copies.
TEST(HaiTrainDryRunTest, Fp8PlansTheFp8CopiesAndNoBf16CopyOfTheRoutedExperts) {
  std::string config = "--config " + shipped_config("bench_moe_1p7b.yaml");
  nlohmann::json bf16 = dry_run(config + " --set precision.mode=bf16");
  nlohmann::json fp8 = dry_run(config + " --set precision.mode=fp8");
  for (const char* same : {"grads", "optimizer"}) {  // activations: FP8 caches its own (recompute_memory_test.cc)
    EXPECT_EQ(fp8["memory_per_rank"][same], bf16["memory_per_rank"][same]) << same;
  }
  // The extra parameter bytes: the two e4m3 copies of every fp8_gemm weight (1 byte per element each) and their
  // 128x128 block scales, less the 2-byte bf16 copy of the fp8_only ones (the routed experts, 83% of the parameters).
  double dense_fp8 = 0, routed = 0;
  for (const ParameterSpec& spec :
       deepseek_v3_parameters(load_config(shipped_config("bench_moe_1p7b.yaml"), {}, 1).model)) {
    if (spec.fp8_gemm && !spec.fp8_only) dense_fp8 += static_cast<double>(spec.shape.numel());
    if (spec.fp8_only) routed += static_cast<double>(spec.shape.numel());
  }
  EXPECT_GT(routed, 0.8 * bf16["total_params"].get<double>());
  double extra = fp8["memory_per_rank"]["params"].get<double>() - bf16["memory_per_rank"]["params"].get<double>();
  EXPECT_GE(extra, 2 * dense_fp8);
  EXPECT_LT(extra, 2 * dense_fp8 + 0.001 * (dense_fp8 + routed));
}

// ZeRO-1 shards the AdamW moments and the fp32 master over dp (parallel/zero1.h), but for the masters the model reads
// in fp32 (the embedding, the norms, the MoE gates) and the routing biases, which stay whole: dp 2 plans the same
// bf16 copy and gradients as one rank, a whole fp32 master of only those parameters, and half of the rest of the
// master and of the moments in the optimizer state.
TEST(HaiTrainDryRunTest, ZeroOneHalvesTheMomentsAndTheMasterAtDpTwo) {
  std::string config = "--config " + shipped_config("bench_moe_1p7b.yaml") + " --set precision.mode=bf16" +
                       " --set optimizer.moment_dtype=fp32";
  nlohmann::json one = dry_run(config + " --set train.global_batch_size=8");
  nlohmann::json two = dry_run(config + " --set train.global_batch_size=8 --world-size 2");
  ASSERT_EQ(two["layout"]["dp"], 2);
  EXPECT_EQ(two["memory_per_rank"]["grads"], one["memory_per_rank"]["grads"]);
  double parameters = one["total_params"].get<double>();
  EXPECT_EQ(one["memory_per_rank"]["params"].get<double>(), 6 * parameters);      // bf16 copy + fp32 master
  EXPECT_EQ(one["memory_per_rank"]["optimizer"].get<double>(), 8 * parameters);   // two fp32 moments
  double whole_master = two["memory_per_rank"]["params"].get<double>() - 2 * parameters;  // beside the bf16 copy
  EXPECT_GT(whole_master, 0.0);
  EXPECT_LT(whole_master, 0.2 * 4 * parameters);  // the embedding and a few vectors
  double sharded = 8 * parameters + (4 * parameters - whole_master);  // moments + the rest of the master
  EXPECT_NEAR(two["memory_per_rank"]["optimizer"].get<double>(), sharded / 2, 16.0);  // halves, to a rounding
}

// configs/bench_v3_layers.yaml is laid out to train on one 80-GB GPU (H100: ~78 GiB usable) with AdamW, in BF16 and
// in FP8, by the plan of the memory the rank needs (parameters, gradients, moments, one micro-batch's activations and
// its backward temporaries), the kinds summing to the total.
TEST(HaiTrainDryRunTest, BenchV3LayersFitsOneEightyGigabyteGpu) {
  constexpr double kUsableBytes = 78.0 * (1 << 30);
  for (const char* mode : {"bf16", "fp8"}) {
    nlohmann::json report =
        dry_run("--config " + shipped_config("bench_v3_layers.yaml") + " --set precision.mode=" + mode);
    double bytes = 0;
    for (const char* field :
         {"params", "grads", "optimizer", "activations", "backward_temporaries", "pipeline_buffers"}) {
      bytes += report["memory_per_rank"][field].get<double>();
    }
    EXPECT_EQ(bytes, report["memory_per_rank"]["total"].get<double>()) << mode;
    EXPECT_LT(bytes, kUsableBytes) << mode;
    EXPECT_NEAR(report["total_params"].get<double>(), 2.69e9, 0.02e9) << mode;
  }
}

// The communication plan (model/comm_plan.h): a table on stdout before the JSON line, and the same numbers in the
// JSON, for pp 2 DualPipe x ep 2 x dp 2; a link bandwidth out of range exits 2 naming its key.
TEST(HaiTrainDryRunTest, PrintsTheCommunicationOfEachPipelineRank) {
  std::string config = "--config " + shipped_config("tiny.yaml") +
                       " --world-size 4 --set parallel.pp=2 --set parallel.schedule=dualpipe --set parallel.ep=2"
                       " --set train.micro_batch_size=1 --set train.global_batch_size=8";
  TempDirectory dir;
  CommandResult result = run_hai_train(config + " --dry-run", dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("| pipeline ranks | group | traffic |"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("| 0-1 | ep | dispatch forward | routed rows, fp32 | nvlink |"), std::string::npos)
      << result.out;
  nlohmann::json communication = nlohmann::json::parse(last_line(result.out))["communication"];
  EXPECT_EQ(communication["assumptions"]["nvlink_gbps"], 160.0);
  EXPECT_EQ(communication["assumptions"]["infiniband_gbps"], 50.0);
  ASSERT_EQ(communication["per_pipeline_rank"].size(), 2u);
  std::set<std::string> groups;
  for (const nlohmann::json& traffic : communication["per_pipeline_rank"][0]["traffic"]) {
    groups.insert(traffic["group"].get<std::string>());
  }
  EXPECT_EQ(groups, (std::set<std::string>{"dp", "ep", "pp", "pp_replicas"}));
  // tiny: 2 MoE layers of 64 wide (+ MTP's on the last stage), 2 of 8 experts per token, 64 tokens per micro-batch:
  // half of the 128 rows go to the other EP rank, 64 x 64 fp32 each way.
  EXPECT_DOUBLE_EQ(communication["moe_layer"]["forward_nvlink_bytes"].get<double>(), 2 * 64 * 64 * 4);
  EXPECT_GT(communication["moe_layer"]["forward_ratio"].get<double>(), 0);

  CommandResult bad = run_hai_train(config + " --set runtime.infiniband_gbps=0 --dry-run", dir.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("config error: runtime.infiniband_gbps: must be in [0.1, 100000]"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace hai
