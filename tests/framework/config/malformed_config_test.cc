// Malformed configs: each must fail with the exact key path, a fragment of the message and the YAML line.

#include <gtest/gtest.h>

#include <string>

#include "tests/framework/config/config_test_util.h"

namespace hai {
namespace {

struct BadConfig {
  const char* name;
  const char* yaml;
  int world_size;
  const char* key_path;
  const char* fragment;
  int line;  // 0: the error has no line
};

// Cases without a data section get synthetic data appended (after their lines), so that only their problem shows.
std::string with_data(const std::string& yaml) {
  return yaml.find("data:") == std::string::npos ? yaml + "\ndata:\n  source: synthetic\n" : yaml;
}

const BadConfig bad_configs[] = {
    // YAML itself
    {"SyntaxErrorUnclosedList", "model:\n  hidden_size: [64\n  vocab_size: 3\n", 1, "test.yaml",
     "YAML syntax error", 3},
    {"SyntaxErrorBadIndent", "model:\n  hidden_size: 64\n bad: 3\n", 1, "test.yaml", "YAML syntax error", 3},
    {"TopLevelIsAList", "- model\n- train\n", 1, "test.yaml", "expected a map of sections", 0},
    {"DuplicateKey", "model:\n  hidden_size: 64\n  hidden_size: 32\n", 1, "model.hidden_size", "duplicate key", 3},
    // unknown and misspelt keys
    {"MisspeltSection", "modle:\n  hidden_size: 64\n", 1, "modle", "unknown key; did you mean model?", 1},
    {"MisspeltKey", "model:\n  hidden_sise: 64\n", 1, "model.hidden_sise",
     "unknown key; did you mean model.hidden_size?", 2},
    {"MisplacedKey", "train:\n  lr: 0.1\n", 1, "train.lr", "unknown key; did you mean optimizer.lr?", 2},
    {"MisspeltNestedKey", "model:\n  moe:\n    routed_expert: 8\n", 1, "model.moe.routed_expert",
     "did you mean model.moe.routed_experts?", 3},
    {"UnknownKeyWithoutSuggestion", "model:\n  banana_count: 3\n", 1, "model.banana_count", "unknown key", 2},
    // wrong types
    {"WordForInteger", "model:\n  hidden_size: big\n", 1, "model.hidden_size", "expected an integer (got \"big\")", 2},
    {"FractionForInteger", "model:\n  num_layers: 2.5\n", 1, "model.num_layers", "expected an integer", 2},
    {"MissingValue", "model:\n  hidden_size:\n", 1, "model.hidden_size", "expected an integer (got nothing)", 2},
    {"ListForInteger", "model:\n  hidden_size: [1, 2]\n", 1, "model.hidden_size", "(got a list)", 2},
    {"WordForBool", "parallel:\n  sequence_parallel: maybe\n", 1, "parallel.sequence_parallel",
     "expected true or false", 2},
    {"WordForNumber", "optimizer:\n  lr: fast\n", 1, "optimizer.lr", "expected a number (got \"fast\")", 2},
    {"InfiniteNumber", "optimizer:\n  lr: .inf\n", 1, "optimizer.lr", "expected a finite number", 2},
    {"UnknownEnumValue", "parallel:\n  schedule: dualpipe2\n", 1, "parallel.schedule",
     "expected one of 1f1b | dualpipe | dualpipev (got \"dualpipe2\")", 2},
    {"UnknownRecomputeMode", "train:\n  recompute: partial\n", 1, "train.recompute",
     "expected one of none | selective | full (got \"partial\")", 2},
    {"SectionIsAScalar", "model: 5\n", 1, "model", "expected a section of keys (got \"5\")", 1},
    {"BetasOfWrongLength", "optimizer:\n  betas: [0.9]\n", 1, "optimizer.betas", "expected a list of two numbers", 2},
    {"WordForAuto", "parallel:\n  dp: many\n", 1, "parallel.dp", "expected an integer or auto", 2},
    // per-key rules
    {"NegativeSize", "model:\n  hidden_size: -64\n", 1, "model.hidden_size", "must be in [1, 1048576] (got -64)", 2},
    {"ZeroHeads", "model:\n  num_heads: 0\n", 1, "model.num_heads", "must be in [1, 16384] (got 0)", 2},
    {"ZeroDp", "parallel:\n  dp: 0\n", 1, "parallel.dp", "must be in [1, 1048576] or auto (got 0)", 2},
    {"BetaOfOne", "optimizer:\n  betas: [0.9, 1.0]\n", 1, "optimizer.betas", "must be each in [0, 1)", 2},
    {"YarnFactorBelowOne", "model:\n  rope:\n    yarn:\n      factor: 0.5\n", 1, "model.rope.yarn.factor",
     "must be in [1, 1000000] (got 0.5)", 4},
    {"EmaDecayOfOne", "ema:\n  decay: 1.0\n", 1, "ema.decay", "must be in (0, 1)", 2},
    {"EmaEvalWithoutEma", "ema:\n  eval: true\n", 1, "ema.eval", "needs ema.enabled", 2},
    {"ValidFractionOfOne", "data:\n  source: synthetic\n  valid_fraction: 1.0\n", 1, "data.valid_fraction",
     "must be in [0, 1)", 3},
    {"EmptyRunDir", "logging:\n  run_dir: \"\"\n", 1, "logging.run_dir", "must be non-empty", 2},
    // the communication plan's links and rate (model/comm_plan.h)
    {"ZeroNvlinkBandwidth", "runtime:\n  nvlink_gbps: 0\n", 1, "runtime.nvlink_gbps",
     "must be in [0.1, 100000] (got 0.0)", 2},
    {"NegativeInfinibandBandwidth", "runtime:\n  infiniband_gbps: -50\n", 1, "runtime.infiniband_gbps",
     "must be in [0.1, 100000] (got -50.0)", 2},
    {"ZeroGpusPerNode", "runtime:\n  gpus_per_node: 0\n", 1, "runtime.gpus_per_node", "must be in [1, 4096] (got 0)",
     2},
    {"ZeroAchievedTflops", "runtime:\n  achieved_tflops: 0\n", 1, "runtime.achieved_tflops",
     "must be in [0.001, 1000000] (got 0.0)", 2},
    // model shape
    {"MoreDenseLayersThanLayers", "model:\n  num_layers: 3\n  first_dense_layers: 4\n", 1, "model.first_dense_layers",
     "must not exceed model.num_layers (4 > 3)", 3},
    {"OddRopeDim", "model:\n  qk_rope_head_dim: 7\n", 1, "model.qk_rope_head_dim", "must be even", 2},
    {"ExpertsNotDivisibleByGroups", "model:\n  moe:\n    routed_experts: 10\n", 1, "model.moe.routed_experts",
     "10 experts cannot be split into 4 equal groups", 3},
    {"MoreGroupsPerTokenThanGroups", "model:\n  moe:\n    groups: 4\n    groups_per_token: 5\n", 1,
     "model.moe.groups_per_token", "must not exceed model.moe.groups (5 > 4)", 4},
    {"MoreExpertsPerTokenThanExperts",
     "model:\n  moe:\n    routed_experts: 8\n    groups: 1\n    groups_per_token: 1\n    experts_per_token: 9\n", 1,
     "model.moe.experts_per_token", "must not exceed model.moe.routed_experts (9 > 8)", 6},
    {"SelectedGroupsTooSmall", "model:\n  moe:\n    groups_per_token: 1\n    experts_per_token: 3\n", 1,
     "model.moe.experts_per_token", "the 1 selected groups hold only 2 experts", 4},
    {"OneExpertPerGroup", "model:\n  moe:\n    groups: 8\n    groups_per_token: 2\n", 1, "model.moe.groups",
     "each group needs at least 2 experts", 3},
    {"YarnBetasReversed", "model:\n  rope:\n    yarn:\n      factor: 40\n      beta_fast: 1\n      beta_slow: 32\n", 1,
     "model.rope.yarn.beta_fast", "must be greater than model.rope.yarn.beta_slow", 5},
    {"SequenceLongerThanModel", "train:\n  seq_len: 128\n", 1, "train.seq_len",
     "must not exceed model.max_seq_len (128 > 64)", 2},
    // parallel layout
    {"LayoutDoesNotMatchWorld", "parallel:\n  dp: 2\n", 4, "parallel.dp",
     "pp x dp x tp = 1 x 2 x 1 = 2 ranks, but the job has 4", 2},
    {"AutoDpDoesNotDivideWorld", "parallel:\n  pp: 3\n", 4, "parallel.dp",
     "auto needs the 4 ranks of the job to be a multiple of pp x tp = 3 x 1 = 3", 0},
    {"HeadsNotDivisibleByTp", "model:\n  num_heads: 4\nparallel:\n  tp: 3\n", 3, "model.num_heads",
     "4 heads cannot be split over parallel.tp = 3 ranks", 2},
    {"FfnNotDivisibleByTp", "model:\n  num_heads: 4\n  dense_ffn_size: 130\nparallel:\n  tp: 4\n", 4,
     "model.dense_ffn_size", "130 columns cannot be split over parallel.tp = 4 ranks", 3},
    {"SequenceParallelWithoutTp", "parallel:\n  sequence_parallel: true\n", 1, "parallel.sequence_parallel",
     "needs parallel.tp > 1", 2},
    {"SeqLenNotDivisibleByTpUnderSequenceParallel",
     "model:\n  num_heads: 4\ntrain:\n  seq_len: 63\nparallel:\n  tp: 2\n  sequence_parallel: true\n", 2,
     "train.seq_len", "63 tokens cannot be split over parallel.tp = 2 ranks", 4},
    {"Fp8TileSpansTpRanks", "model:\n  num_heads: 4\nprecision:\n  mode: fp8\nparallel:\n  tp: 2\n", 2,
     "model.num_heads", "would cut a 128-wide FP8 tile", 2},
    {"EpDoesNotDivideDpTimesTp", "parallel:\n  ep: 4\n", 2, "parallel.ep", "must divide dp x tp = 2 x 1 = 2 (got 4)",
     2},
    {"ExpertsNotDivisibleByEp", "model:\n  moe:\n    routed_experts: 8\nparallel:\n  ep: 3\n", 3,
     "model.moe.routed_experts", "8 experts cannot be split over parallel.ep = 3 ranks", 3},
    {"TooFewLayersForStages", "model:\n  num_layers: 3\nparallel:\n  pp: 4\n", 4, "model.num_layers",
     "3 layers cannot fill 4 pipeline stages", 2},
    {"TooFewLayersForDualPipeV",
     "model:\n  num_layers: 3\nparallel:\n  pp: 2\n  schedule: dualpipev\n  micro_batches: 4\ntrain:\n"
     "  micro_batch_size: 2\n",
     2, "model.num_layers", "3 layers cannot fill 4 pipeline stages", 2},
    // batch
    {"GlobalBatchNotDivisible", "train:\n  micro_batch_size: 4\n  global_batch_size: 10\n", 1,
     "train.global_batch_size", "must be a multiple of micro_batch_size x dp = 4 x 1 = 4 (got 10)", 3},
    {"GlobalBatchNotDivisibleByDp", "train:\n  micro_batch_size: 4\n  global_batch_size: 12\n", 2,
     "train.global_batch_size", "micro_batch_size x dp = 4 x 2 = 8 (got 12)", 3},
    {"ExplicitMicroBatchesDisagree", "parallel:\n  micro_batches: 3\n", 1, "parallel.micro_batches",
     "micro_batch_size x micro_batches x dp = 4 x 3 x 1 = 12, but train.global_batch_size is 8", 2},
    // pipeline schedules
    {"DualPipeOddPp", "parallel:\n  pp: 3\n  schedule: dualpipe\n", 3, "parallel.pp",
     "dualpipe needs an even number of pipeline ranks (got 3)", 2},
    {"DualPipeTooFewMicroBatches", "parallel:\n  pp: 2\n  schedule: dualpipe\n", 2, "parallel.micro_batches",
     "dualpipe needs an even number of micro-batches >= 2 x pp = 4 (got 2)", 0},
    {"DualPipeOddMicroBatches",
     "parallel:\n  pp: 2\n  schedule: dualpipe\n  micro_batches: 5\ntrain:\n  micro_batch_size: 1\n"
     "  global_batch_size: 5\n",
     2, "parallel.micro_batches", "even number of micro-batches >= 2 x pp = 4 (got 5)", 4},
    {"DualPipeVTooFewMicroBatches", "model:\n  num_layers: 4\nparallel:\n  pp: 2\n  schedule: dualpipev\n", 2,
     "parallel.micro_batches", "dualpipev needs at least 2 x pp = 4 micro-batches (got 2)", 0},
    // optimizer, data, precision
    {"MinLrAboveLr", "optimizer:\n  lr: 1.0e-5\n  min_lr: 1.0e-4\n", 1, "optimizer.min_lr",
     "must not exceed optimizer.lr (0.0001 > 1e-05)", 3},
    {"DeepseekStagesOutOfOrder",
     "optimizer:\n  schedule: deepseek_v3\n  deepseek_v3:\n    decay_start: 0.9\n    decay_end: 0.5\n", 1,
     "optimizer.deepseek_v3.decay_end", "must not come before decay_start", 5},
    {"DeepseekFinalLrAboveMinLr", "optimizer:\n  schedule: deepseek_v3\n  min_lr: 1.0e-6\n", 1,
     "optimizer.deepseek_v3.final_lr", "must not exceed optimizer.min_lr", 0},
    {"IndexedDataWithoutPath", "data:\n  source: indexed\n", 1, "data.path", "required when data.source is indexed", 0},
    {"EvalWithoutEvalData", "data:\n  source: indexed\n  path: data/x\ntrain:\n  eval_interval: 10\n", 1,
     "train.eval_interval", "evaluation needs data", 5},
    {"LossScaleMinAboveInit", "precision:\n  loss_scale:\n    init: 8.0\n    min: 16.0\n", 1,
     "precision.loss_scale.min", "must not exceed precision.loss_scale.init (16.0 > 8.0)", 4},
};

class MalformedConfig : public ::testing::TestWithParam<BadConfig> {};

TEST_P(MalformedConfig, NamesKeyMessageAndLine) {
  const BadConfig& bad = GetParam();
  std::optional<ConfigError> error = testing::config_error_of(with_data(bad.yaml), bad.world_size);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->key_path(), bad.key_path) << error->what();
  EXPECT_NE(error->problem().find(bad.fragment), std::string::npos) << error->what();
  if (bad.line == 0) {
    EXPECT_FALSE(error->yaml_line().has_value()) << error->what();
  } else {
    EXPECT_EQ(error->yaml_line(), bad.line) << error->what();
  }
}

INSTANTIATE_TEST_SUITE_P(Config, MalformedConfig, ::testing::ValuesIn(bad_configs),
                         [](const ::testing::TestParamInfo<BadConfig>& info) { return info.param.name; });

TEST(ConfigError, PrintedForm) {
  EXPECT_STREQ(ConfigError("model.hidden_size", "must be > 0 (got -1)", 7).what(),
               "config error: model.hidden_size: must be > 0 (got -1) (line 7)");
  EXPECT_STREQ(ConfigError("parallel.dp", "auto needs ...").what(), "config error: parallel.dp: auto needs ...");
}

TEST(ConfigError, IsAHaiError) {
  try {
    throw ConfigError("train.seq_len", "too long", 3);
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "config error: train.seq_len: too long (line 3)");
  }
}

TEST(MalformedConfigFile, MissingFileNamesThePath) {
  try {
    parse_config_file("/nonexistent/hai/config.yaml");
    FAIL() << "no throw";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key_path(), "/nonexistent/hai/config.yaml");
    EXPECT_EQ(error.problem(), "cannot open the config file");
  }
}

}  // namespace
}  // namespace hai
