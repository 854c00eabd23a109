// The effective config: parse -> write -> parse gives an equal Config and identical text; JSON mirrors the YAML.

#include <gtest/gtest.h>

#include "framework/config/parse.h"
#include "framework/config/schema.h"
#include "framework/config/write.h"
#include "tests/framework/config/config_test_util.h"

namespace hai {
namespace {

void expect_round_trip(const Config& config) {
  std::string text = config_to_yaml(config);
  ParsedConfig parsed = parse_config_text(text);
  EXPECT_TRUE(parsed.config == config) << text;
  EXPECT_EQ(config_to_yaml(parsed.config), text);
}

TEST(ConfigRoundTrip, Defaults) { expect_round_trip(Config{}); }

TEST(ConfigRoundTrip, ShippedConfigs) {
  for (const char* name : {"configs/tiny.yaml", "configs/bench_moe_1p7b.yaml", "configs/deepseek_v3_671b.yaml"}) {
    SCOPED_TRACE(name);
    expect_round_trip(parse_config_file(testing::source_path(name)).config);
  }
}

TEST(ConfigRoundTrip, EveryKeyChanged) {
  Config config;
  config.model.norm_eps = 1.0 / 3.0;
  config.model.rope.yarn.factor = 40.0;
  config.parallel.dp = 8;
  config.parallel.micro_batches = 12;
  config.parallel.schedule = PipelineSchedule::dualpipev;
  config.parallel.sequence_parallel = true;
  config.parallel.stage_layers = {3, 5, 2};
  config.optimizer.betas = {0.8, 0.999};
  config.optimizer.schedule = LrSchedule::deepseek_v3;
  config.optimizer.moment_dtype = MomentDType::fp32;
  config.precision.mode = PrecisionMode::fp8;
  config.precision.fp8.pow2_scales = true;
  config.data.source = DataSource::synthetic;
  config.data.path = "dir with spaces/\"quoted\" \\ name: x";
  config.checkpoint.resume = "none";
  config.runtime.device = RuntimeDevice::cuda;
  config.train.seed = 0;
  config.train.recompute = RecomputeMode::selective;
  expect_round_trip(config);
}

TEST(ConfigRoundTrip, WritesEveryKeyOnce) {
  std::string text = config_to_yaml(Config{});
  EXPECT_EQ(text.find("  dp: auto\n"), text.rfind("  dp: auto\n"));
  EXPECT_NE(text.find("\n  moe:\n    routed_experts: 8\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  betas: [0.9, 0.95]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  eps: 1e-08\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  init: 65536.0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  device: auto\n"), std::string::npos) << text;
  std::size_t key_lines = 0;
  for (char c : text) key_lines += c == '\n';
  std::size_t section_lines = 0;
  for (std::size_t at = text.find(":\n"); at != std::string::npos; at = text.find(":\n", at + 1)) ++section_lines;
  EXPECT_EQ(key_lines - section_lines - 1, config_schema().size());  // minus the header comment
}

TEST(ConfigRoundTrip, ResolvedAutosAreWritten) {
  Config config = resolve_auto(Config{}, 2);
  EXPECT_EQ(config.parallel.dp, 2);
  EXPECT_EQ(config.parallel.micro_batches, 1);
  std::string text = config_to_yaml(config);
  EXPECT_NE(text.find("  dp: 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  micro_batches: 1\n"), std::string::npos) << text;
}

TEST(ConfigJson, NestedBySection) {
  Config config;
  config.optimizer.lr = 1e-3;
  nlohmann::json json = config_to_json(config);
  EXPECT_EQ(json["model"]["moe"]["groups"], 4);
  EXPECT_EQ(json["model"]["rope"]["yarn"]["original_max_position"], 4096);
  EXPECT_EQ(json["parallel"]["dp"], "auto");
  EXPECT_EQ(json["parallel"]["schedule"], "1f1b");
  EXPECT_EQ(json["optimizer"]["lr"], 1e-3);
  EXPECT_EQ(json["optimizer"]["betas"], nlohmann::json({0.9, 0.95}));
  EXPECT_EQ(json["precision"]["fp8"]["pow2_scales"], false);
  EXPECT_EQ(json["checkpoint"]["resume"], "auto");
  EXPECT_EQ(json["runtime"]["stop_signals"], nlohmann::json({"SIGTERM", "SIGINT", "SIGUSR1"}));
  // betas flattens into two leaves, stop_signals into three
  EXPECT_EQ(json.flatten().size(), config_schema().size() + 3);
}

TEST(ConfigFile, WriteCreatesTheDirectory) {
  std::string dir = ::testing::TempDir() + "hai_config_write_test/run";
  Config config;
  config.model.hidden_size = 96;
  write_config_file(config, dir + "/config.yaml");
  EXPECT_TRUE(parse_config_file(dir + "/config.yaml").config == config);
}

}  // namespace
}  // namespace hai
