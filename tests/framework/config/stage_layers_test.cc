// parallel.stage_layers: explicit decoder layers per pipeline stage. Accepted when there is one count per stage
// (pp, or 2 x pp under dualpipev) summing to model.num_layers; otherwise a config error naming the key, its YAML
// line and what is wrong. Written back as a YAML list.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "framework/config/write.h"
#include "tests/framework/config/config_test_util.h"

namespace hai {
namespace {

// 4 layers, synthetic data, and `parallel` as the parallel section's keys.
std::string with_parallel(const std::string& parallel) {
  return "model:\n  num_layers: 4\nparallel:\n" + parallel + "data:\n  source: synthetic\n";
}

struct StageLayersError {
  std::string key_path;
  std::string problem;
  std::optional<int> line;
};

StageLayersError error_of(const std::string& parallel, int world_size) {
  std::optional<ConfigError> error = testing::config_error_of(with_parallel(parallel), world_size);
  if (!error) return {};
  return {error->key_path(), error->problem(), error->yaml_line()};
}

TEST(StageLayers, EmptyByDefault) { EXPECT_TRUE(Config{}.parallel.stage_layers.empty()); }

TEST(StageLayers, OneCountPerStageSummingToTheLayersIsAccepted) {
  EXPECT_EQ(testing::load_text(with_parallel("  pp: 2\n  stage_layers: [1, 3]\n"), 2).parallel.stage_layers,
            (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(testing::load_text(with_parallel("  stage_layers: [4]\n"), 1).parallel.stage_layers,
            (std::vector<std::int64_t>{4}));
  // dualpipe holds pp stages (each twice); dualpipev 2 x pp.
  std::string dualpipe = "  pp: 2\n  schedule: dualpipe\n  micro_batches: 4\n  stage_layers: [3, 1]\n";
  EXPECT_EQ(testing::load_text(with_parallel(dualpipe) + "train:\n  micro_batch_size: 1\n  global_batch_size: 4\n", 2)
                .parallel.stage_layers,
            (std::vector<std::int64_t>{3, 1}));
  std::string dualpipev = "  pp: 2\n  schedule: dualpipev\n  micro_batches: 4\n  stage_layers: [1, 1, 1, 1]\n";
  EXPECT_EQ(testing::load_text(with_parallel(dualpipev) + "train:\n  micro_batch_size: 1\n  global_batch_size: 4\n", 2)
                .parallel.stage_layers,
            (std::vector<std::int64_t>{1, 1, 1, 1}));
}

TEST(StageLayers, OverridesReadAList) {
  Config config = testing::load_text(with_parallel("  pp: 2\n"), 2, {"parallel.stage_layers=[2, 2]"});
  EXPECT_EQ(config.parallel.stage_layers, (std::vector<std::int64_t>{2, 2}));
}

TEST(StageLayers, WrongCountOfStagesNamesTheKey) {
  StageLayersError error = error_of("  pp: 2\n  stage_layers: [1, 1, 2]\n", 2);
  EXPECT_EQ(error.key_path, "parallel.stage_layers");
  EXPECT_EQ(error.problem, "3 counts for 2 pipeline stages (pp 2 under 1f1b)");
  EXPECT_EQ(error.line, 5);
  error = error_of("  pp: 2\n  schedule: dualpipev\n  micro_batches: 4\n  stage_layers: [2, 2]\n", 2);
  EXPECT_EQ(error.key_path, "parallel.stage_layers");
  EXPECT_EQ(error.problem, "2 counts for 4 pipeline stages (pp 2 under dualpipev)");
}

TEST(StageLayers, CountsNotSummingToTheLayersNameTheKey) {
  StageLayersError error = error_of("  pp: 2\n  stage_layers: [2, 3]\n", 2);
  EXPECT_EQ(error.key_path, "parallel.stage_layers");
  EXPECT_EQ(error.problem, "the stages hold 5 layers, model.num_layers is 4");
  EXPECT_EQ(error.line, 5);
}

TEST(StageLayers, AStageWithoutLayersNamesTheKey) {
  StageLayersError error = error_of("  pp: 2\n  stage_layers: [4, 0]\n", 2);
  EXPECT_EQ(error.key_path, "parallel.stage_layers");
  EXPECT_EQ(error.problem, "must be each in [1, 16384] (got [4, 0])");
  EXPECT_EQ(error.line, 5);
}

TEST(StageLayers, ANonListNamesTheKey) {
  StageLayersError error = error_of("  pp: 2\n  stage_layers: 4\n", 2);
  EXPECT_EQ(error.key_path, "parallel.stage_layers");
  EXPECT_EQ(error.problem, "expected a list of integers (got \"4\")");
  error = error_of("  pp: 2\n  stage_layers: [2, two]\n", 2);
  EXPECT_EQ(error.key_path, "parallel.stage_layers");
  EXPECT_EQ(error.problem, "expected an integer (got \"two\")");
}

TEST(StageLayers, WrittenAsAYamlList) {
  Config config;
  EXPECT_NE(config_to_yaml(config).find("  stage_layers: []\n"), std::string::npos);
  config.parallel.stage_layers = {3, 1};
  EXPECT_NE(config_to_yaml(config).find("  stage_layers: [3, 1]\n"), std::string::npos);
  EXPECT_EQ(config_to_json(config)["parallel"]["stage_layers"], nlohmann::json({3, 1}));
}

}  // namespace
}  // namespace hai
