// load_config: file + overrides + validation + auto resolution + check_supported, with file lines in errors.

#include <gtest/gtest.h>

#include <fstream>

#include "framework/config/load.h"
#include "tests/framework/config/config_test_util.h"

namespace hai {
namespace {

std::string write_temp_config(const std::string& name, const std::string& yaml) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << yaml;
  return path;
}

TEST(LoadConfig, ResolvesAutosForTheWorld) {
  Config config = load_config(testing::source_path("configs/tiny.yaml"), {"train.global_batch_size=16"}, 1);
  EXPECT_EQ(config.parallel.dp, 1);
  EXPECT_EQ(config.parallel.micro_batches, 4);
}

TEST(LoadConfig, ErrorsCarryTheFileLine) {
  std::string path = write_temp_config("load_test_bad.yaml", "data:\n  source: synthetic\nmodel:\n  num_heads: -4\n");
  try {
    load_config(path, {}, 1);
    FAIL() << "no throw";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(), "config error: model.num_heads: must be in [1, 16384] (got -4) (line 4)");
  }
}

TEST(LoadConfig, RefusesSequenceParallelismWithoutTensorParallelism) {
  std::string path = write_temp_config("load_test_sequence_parallel.yaml",
                                       "data:\n  source: synthetic\nparallel:\n  sequence_parallel: true\n");
  try {
    load_config(path, {}, 2);
    FAIL() << "no throw";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key_path(), "parallel.sequence_parallel");
    EXPECT_EQ(error.yaml_line(), 4);
    EXPECT_EQ(error.problem(), "needs parallel.tp > 1 (it splits the tokens over the tp ranks)");
  }
}

TEST(LoadConfig, DataParallelismIsSupported) {
  Config config = load_config(testing::source_path("configs/tiny.yaml"), {}, 2);
  EXPECT_EQ(config.parallel.dp, 2);
}

TEST(LoadConfig, SyntaxErrorNamesTheFile) {
  std::string path = write_temp_config("load_test_syntax.yaml", "model:\n  hidden_size: 64\n  - oops\n");
  try {
    load_config(path, {}, 1);
    FAIL() << "no throw";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key_path(), path);
    EXPECT_NE(error.problem().find("YAML syntax error"), std::string::npos);
    EXPECT_TRUE(error.yaml_line().has_value());
  }
}

}  // namespace
}  // namespace hai
