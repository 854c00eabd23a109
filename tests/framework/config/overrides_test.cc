// --set overrides: applied in order after the file (the later wins), nested keys, sections created on the way,
// and the same error contract as the file (without a line, since the value did not come from it).

#include <gtest/gtest.h>

#include "tests/framework/config/config_test_util.h"

namespace hai {
namespace {

const char* file = "model:\n  hidden_size: 64\ndata:\n  source: synthetic\n";

TEST(ConfigOverrides, ReplaceAFileValue) {
  Config config = testing::load_text(file, 1, {"model.hidden_size=128"});
  EXPECT_EQ(config.model.hidden_size, 128);
}

TEST(ConfigOverrides, LaterWins) {
  Config config = testing::load_text(file, 1, {"model.hidden_size=32", "model.vocab_size=300", "model.hidden_size=48"});
  EXPECT_EQ(config.model.hidden_size, 48);
  EXPECT_EQ(config.model.vocab_size, 300);
}

TEST(ConfigOverrides, NestedKeysCreateSections) {
  Config config = testing::load_text(file, 1, {"model.rope.yarn.factor=40", "precision.loss_scale.window=500"});
  EXPECT_EQ(config.model.rope.yarn.factor, 40.0);
  EXPECT_EQ(config.precision.loss_scale.window, 500);
}

TEST(ConfigOverrides, FlowValuesAndAuto) {
  Config config = testing::load_text(file, 2, {"optimizer.betas=[0.8, 0.9]", "parallel.dp=2", "parallel.dp=auto",
                                               "model.rope={theta: 500000}", "parallel.schedule=1f1b"});
  EXPECT_EQ(config.optimizer.betas, (std::array<double, 2>{0.8, 0.9}));
  EXPECT_FALSE(config.parallel.dp.has_value());
  EXPECT_EQ(config.model.rope.theta, 500000.0);
}

TEST(ConfigOverrides, StringValues) {
  Config config = testing::load_text(file, 1, {"data.source=indexed", "data.path=data/with=equals"});
  EXPECT_EQ(config.data.source, DataSource::indexed);
  EXPECT_EQ(config.data.path, "data/with=equals");
}

TEST(ConfigOverrides, UnknownKeyIsAnError) {
  std::optional<ConfigError> error = testing::config_error_of(file, 1, {"model.hiden_size=3"});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->key_path(), "model.hiden_size");
  EXPECT_EQ(error->problem(), "unknown key; did you mean model.hidden_size?");
  EXPECT_FALSE(error->yaml_line());
}

TEST(ConfigOverrides, BadValueHasNoLine) {
  std::optional<ConfigError> error = testing::config_error_of(file, 1, {"model.hidden_size=-1"});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->key_path(), "model.hidden_size");
  EXPECT_EQ(error->problem(), "must be in [1, 1048576] (got -1)");
  EXPECT_FALSE(error->yaml_line()) << error->what();
}

TEST(ConfigOverrides, WrongTypeNamesTheKey) {
  std::optional<ConfigError> error = testing::config_error_of(file, 1, {"train.steps=lots"});
  ASSERT_TRUE(error);
  EXPECT_STREQ(error->what(), "config error: train.steps: expected an integer (got \"lots\")");
}

TEST(ConfigOverrides, MissingEqualsSign) {
  std::optional<ConfigError> error = testing::config_error_of(file, 1, {"model.hidden_size"});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->key_path(), "--set model.hidden_size");
  EXPECT_EQ(error->problem(), "expected KEY=VALUE");
}

TEST(ConfigOverrides, EmptyKeyPart) {
  std::optional<ConfigError> error = testing::config_error_of(file, 1, {"model..hidden_size=3"});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->problem(), "the key path has an empty part");
}

TEST(ConfigOverrides, InvalidYamlValue) {
  std::optional<ConfigError> error = testing::config_error_of(file, 1, {"optimizer.betas=[0.9,"});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->key_path(), "optimizer.betas");
  EXPECT_NE(error->problem().find("is not valid YAML"), std::string::npos) << error->what();
}

TEST(ConfigOverrides, KeepOtherFileLines) {
  std::optional<ConfigError> error =
      testing::config_error_of("model:\n  hidden_size: 64\n  num_layers: 0\ndata:\n  source: synthetic\n", 1,
                               {"model.hidden_size=32"});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->key_path(), "model.num_layers");
  EXPECT_EQ(error->yaml_line(), 3);
}

}  // namespace
}  // namespace hai
